"""Mamba's selective scan (Gu & Dao, 2023, Alg. 2; paper 1, Appendix A.12, eqs. 90-92; paper 5, §2).

Per channel d (state h_t[d] ∈ R^N, zero-order-hold A and Euler B as in the reference code):

    h_t = exp(Δ_t A) ⊙ h_{t−1} + (Δ_t x_t) B_t          A: (D, N) with A < 0, so every decay factor is ≤ 1
    y_t = h_t C_t                                        (the D·x skip and the SiLU(z) gate live in the mixer)

Layout is batch-first: x, Δ: (B, T, D); B_t, C_t: (B, T, N); states: (B, D, N). mamba-ssm's kernel takes
(B, D, T) / (B, N, T) and is called with transposes.

CPU/pure path (`ChunkedSelectiveScan`): a custom autograd function that works chunk by chunk. Per chunk of L steps
it computes the decays exp(Δ A) and inputs B (Δx)ᵀ for all L steps at once (vectorised exp2, outer products, the
readout as one batched matmul), and runs the recurrence itself as one fused `addcmul_` per step on a (B, N, D) slice
that stays in cache. Only products of factors ≤ 1 appear, so it is stable for any Δ ≥ 0 (no ratios of cumulative
decays that overflow; exp(−10⁴) simply underflows to 0). Memory is linear in T and free of the B·T·D·N state
tensor: the forward keeps its inputs and the state at each chunk start; the backward recomputes one chunk at a time
and runs the adjoint recurrence dh_t = C_t dy_t + exp(Δ_{t+1} A) ⊙ dh_{t+1} backwards in time.
Measured (B=8, T=384, D=256, N=16, one thread): ~2.5× faster in the forward than materialising (B, T, D, N)
tensors of log-space cumulative decays, which do not fit in cache; chunks of ≈ 2 MB are fastest.

Compiled CPU path (`selective_scan_numba.NumbaSelectiveScan`, needs numba): the same maths fused into one pass
over time per batch row, the (N, D) state kept in L1 cache; the backward recomputes each chunk from a checkpoint of
the state. Measured (B=8, T=384, D=256, N=16, float32, one thread): forward + backward ≈ 2.5× faster than the chunked
path. Like the chunked path, it gives first derivatives only (neither supports double backward: the chunked
backward writes with `out=`).

Backend selection (`scan_backend`): environment variable `HF_ICL_SCAN_BACKEND` = `auto` (default), `numba` or
`torch`, read at each call. `auto` takes the numba path when numba imports, every tensor is on the CPU and none is
wrapped by a `torch.func` transform (the kernels need plain arrays); inputs run in float32 or float64 as in the torch
path (half precision is promoted). Otherwise it takes the chunked torch path, which is also the oracle of the tests.
`numba` raises if numba is missing or a tensor is not on the CPU.

CUDA: mamba-ssm's `selective_scan_fn` is called when it imports and there is no initial state.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .cpu_paths import SCAN_BACKEND_ENV, SCAN_BACKENDS, compiled_backend, on_cpu, plain_cpu_tensors  # noqa: F401
from .precision import autocast_off

try:
    from .selective_scan_numba import NUMBA_CHUNK_ELEMENTS, NumbaSelectiveScan
except ImportError:  # numba is missing: the torch path
    NumbaSelectiveScan = None

try:  # pragma: no cover - CUDA only
    from mamba_ssm.ops.selective_scan_interface import selective_scan_fn as mamba_ssm_selective_scan
except Exception:  # ImportError, or `selective_scan_cuda` failing to load on a CPU-only machine
    mamba_ssm_selective_scan = None

LOG2_E = 1 / math.log(2)
CHUNK_ELEMENTS = 2**19  # working-set cap of one chunk buffer (fp32: 2 MB)


def scan_backend(*tensors) -> str:
    """`"numba"` or `"torch"`: the CPU path `selective_scan` takes for these tensors under `HF_ICL_SCAN_BACKEND`.

    Args:
        *tensors (`torch.Tensor` or `None`): the scan's inputs (`None` for a missing initial state).
    """
    return compiled_backend(NumbaSelectiveScan is not None, *tensors)


def _discretize(x, delta, A_log2, B, decay, inject):
    """Write the decays 2^(Δ A log2 e) = exp(Δ A) and inputs B (Δx)ᵀ of one chunk into `decay`, `inject` (L, B, N, D).

    Inputs are time-major (L, B, ·). The state is laid out (N, D) with D innermost, so the contractions run over
    long contiguous rows (measured ~5× faster than batched matrix-vector products over N = 16). The buffers are
    allocated once per call: fresh multi-megabyte tensors per chunk cost more in page faults than the arithmetic.
    """
    torch.mul(delta[:, :, None, :], A_log2, out=decay).exp2_()  # exp2 is ~3× faster than exp on CPU
    torch.mul(B[..., None], (delta * x)[:, :, None, :], out=inject)


def _recur(decay, inject, state):
    """Run h_j = decay_j ⊙ h_{j−1} + inject_j over the chunk in place of `inject`; returns all states (L, B, N, D)."""
    for decay_j, state_j in zip(decay.unbind(0), inject.unbind(0)):  # unbind: one call for all the views
        state = state_j.addcmul_(decay_j, state)
    return inject


def _rows(t):
    """(L, B, ...) → (L·B, ...) for batched matmuls."""
    return t.reshape(-1, *t.shape[2:])


class ChunkedSelectiveScan(torch.autograd.Function):
    """Autograd function of the chunked scan on time-major inputs; `selective_scan` is the public entry point.

    forward(x, Δ (T, B, D), A_log2 = A·log2(e) transposed (N, D), B, C (T, B, N), h0 (B, N, D) or None, chunk)
    returns y (T, B, D) and the final state (B, N, D).
    """

    @staticmethod
    @autocast_off
    def forward(ctx, x, delta, A_log2, B, C, initial_state, chunk_size):
        length, batch, channels = x.shape
        state = initial_state if initial_state is not None else x.new_zeros(batch, A_log2.shape[0], channels)
        decay_buffer, state_buffer = x.new_empty(2, min(chunk_size, length), batch, *A_log2.shape)
        y = x.new_empty(length, batch, channels)
        starts = []
        for s in range(0, length, chunk_size):
            e = min(s + chunk_size, length)
            starts.append(state)
            decay, states = decay_buffer[: e - s], state_buffer[: e - s]
            _discretize(x[s:e], delta[s:e], A_log2, B[s:e], decay, states)
            _recur(decay, states, state)  # (L, B, N, D)
            torch.bmm(_rows(C[s:e])[:, None], _rows(states), out=_rows(y[s:e])[:, None])  # y_t = C_tᵀ h_t
            state = states[-1].clone()
        ctx.save_for_backward(x, delta, A_log2, B, C, torch.stack(starts))
        ctx.chunk_size = chunk_size
        ctx.has_initial_state = initial_state is not None
        return y, state

    @staticmethod
    @autocast_off
    def backward(ctx, grad_y, grad_state):
        x, delta, A_log2, B, C, starts = ctx.saved_tensors
        length = x.shape[0]
        grad_x, grad_delta = torch.empty_like(x), torch.empty_like(delta)
        grad_B, grad_C, grad_A = torch.empty_like(B), torch.empty_like(C), torch.zeros_like(A_log2)
        grad_y = grad_y.contiguous() if grad_y is not None else torch.zeros_like(x)  # (T, B, D) rows for bmm
        buffers = x.new_empty(4, min(ctx.chunk_size, length), *starts.shape[1:])
        # ∂loss/∂(last state of the chunk) from outside it: the final-state gradient, then each later chunk's.
        carry = grad_state if grad_state is not None else torch.zeros_like(starts[0])
        for index in reversed(range(starts.shape[0])):
            s = index * ctx.chunk_size
            e = min(s + ctx.chunk_size, length)
            start, dy, delta_t, x_t = starts[index], grad_y[s:e], delta[s:e], x[s:e]  # (B, N, D), 3 × (L, B, D)
            decay, states, grad_h, scratch = buffers[:, : e - s]  # each (L, B, N, D)
            _discretize(x_t, delta_t, A_log2, B[s:e], decay, states)
            _recur(decay, states, start)
            torch.mul(C[s:e][..., None], dy[:, :, None, :], out=grad_h)  # y_t's own contribution C_t dy_tᵀ
            grad_h[-1] += carry
            later = grad_h[-1]
            for decay_j, grad_j in zip(decay.unbind(0)[:0:-1], grad_h.unbind(0)[-2::-1]):  # adjoint, backwards in time
                later = grad_j.addcmul_(decay_j, later)  # dh_j += exp(Δ_{j+1} A) ⊙ dh_{j+1}
            carry = decay[0] * grad_h[0]  # ∂loss/∂h_{s−1}
            # y_t = C_tᵀ h_t; contractions over D use the transposed (row-major) state, ~10× faster than over N
            torch.bmm(_rows(dy)[:, None], _rows(states).transpose(1, 2), out=_rows(grad_C[s:e])[:, None])
            # inject_t = B_t (Δ_t x_t)ᵀ
            grad_dx = torch.bmm(_rows(B[s:e])[:, None], _rows(grad_h)).view_as(dy)  # (L, B, D)
            delta_x = _rows(delta_t * x_t)[:, None]  # (L·B, 1, D)
            torch.bmm(delta_x, _rows(grad_h).transpose(1, 2), out=_rows(grad_B[s:e])[:, None])
            # decay_t = exp(Δ_t A): ∂/∂(Δ_t A) = grad_h_t ⊙ decay_t ⊙ h_{t−1}
            grad_log_decay = decay.mul_(grad_h)
            grad_log_decay[1:].mul_(states[:-1])
            grad_log_decay[0].mul_(start)
            grad_delta[s:e] = torch.mul(grad_log_decay, A_log2, out=scratch).sum(-2).div_(LOG2_E) + grad_dx * x_t
            grad_A += grad_log_decay.mul_(delta_t[:, :, None, :]).sum((0, 1))
            torch.mul(grad_dx, delta_t, out=grad_x[s:e])
        grad_initial = carry if ctx.has_initial_state else None
        return grad_x, grad_delta, grad_A / LOG2_E, grad_B, grad_C, grad_initial, None


def selective_scan(
    x, delta, A, B, C, initial_state=None, chunk_size: int = 16, D=None, delta_softplus=False, z=None
):  # fmt: skip
    """Selective scan over a sequence, from `initial_state` (zeros if `None`); returns (y, final state).

    Args:
        x (`torch.Tensor`): inputs, (B, T, D).
        delta (`torch.Tensor`): step sizes Δ ≥ 0 (after softplus), (B, T, D).
        A (`torch.Tensor`): continuous-time diagonal state matrix, (D, N), negative.
        B, C (`torch.Tensor`): input-dependent input and output vectors, (B, T, N).
        initial_state (`torch.Tensor`, *optional*): (B, D, N) state before the first step.
        chunk_size (`int`): most steps per chunk of the CPU path; fewer when chunk_size·B·D·N would exceed
            `CHUNK_ELEMENTS` (the chunk buffers should stay in cache).
        D (`torch.Tensor`, *optional*): (D,) skip weights: y_t gains D ⊙ x_t (Mamba's D).
        delta_softplus (`bool`): `delta` arrives before its softplus, which the scan applies (Δ = softplus(delta);
            −inf gives Δ = 0, a padded step).
        z (`torch.Tensor`, *optional*): (B, T, D) gate: the output is y ⊙ SiLU(z) (Mamba's gate). `D`,
            `delta_softplus` and `z` are mamba-ssm's `selective_scan_fn` options: the compiled CPU scan and
            mamba-ssm's kernel fuse them; the torch path applies them around the scan.

    Returns:
        `(y, state)`: y (B, T, D) in the dtype of `x`, state (B, D, N) in float32 (float64 for float64 inputs).

    On the CPU the compiled numba path runs when numba imports, the chunked torch path otherwise (see
    `scan_backend` and `HF_ICL_SCAN_BACKEND`); both give first derivatives only.
    """
    if x.is_cuda and mamba_ssm_selective_scan is not None and initial_state is None:  # pragma: no cover
        y, state = mamba_ssm_selective_scan(
            x.transpose(1, 2).contiguous(),
            delta.transpose(1, 2).contiguous(),
            A.float(),
            B.transpose(1, 2).contiguous(),
            C.transpose(1, 2).contiguous(),
            D=None if D is None else D.float(),
            z=None if z is None else z.transpose(1, 2).contiguous(),
            delta_softplus=delta_softplus,
            return_last_state=True,
        )
        return y.transpose(1, 2), state.float()
    dtype = torch.promote_types(x.dtype, torch.float32)  # half precision runs in float32, float64 stays
    if scan_backend(x, delta, A, B, C, initial_state, D, z) == "numba":
        if initial_state is not None:
            initial_state = initial_state.to(dtype).transpose(1, 2).contiguous()  # (B, N, D)
        inputs = [t.to(dtype).contiguous() for t in (x, delta, A.t(), B, C)]  # (B, T, ·) and A as (N, D)
        gate = None if z is None else z.to(dtype).contiguous()
        chunk_size = max(1, min(chunk_size, NUMBA_CHUNK_ELEMENTS // A.numel()))
        y, state = NumbaSelectiveScan.apply(*inputs, initial_state, chunk_size, D, delta_softplus, gate)
        return y.to(x.dtype), state.transpose(1, 2).contiguous()
    if delta_softplus:
        delta = F.softplus(delta)
    if D is not None or z is not None:
        y, state = selective_scan(x, delta, A, B, C, initial_state, chunk_size)
        y = y if D is None else y + x * D
        return (y if z is None else y * F.silu(z)).to(x.dtype), state
    if initial_state is not None:
        initial_state = initial_state.to(dtype).transpose(1, 2)  # (B, N, D)
    time_major = [t.to(dtype).transpose(0, 1).contiguous() for t in (x, delta, B, C)]  # (T, B, ·)
    A_log2 = (A.to(dtype) * LOG2_E).t().contiguous()  # (N, D)
    # Cap the chunk so that one (L, B, N, D) buffer stays ≈ 2 MB (measured fastest for B = 8 and 32 at D = 256).
    chunk_size = max(1, min(chunk_size, CHUNK_ELEMENTS // (x.shape[0] * A.numel())))
    y, state = ChunkedSelectiveScan.apply(*time_major[:2], A_log2, *time_major[2:], initial_state, chunk_size)
    return y.transpose(0, 1).to(x.dtype), state.transpose(1, 2).contiguous()


def selective_state_update(state, x, delta, A, B, C):
    """One recurrent step in O(D·N): returns (y (B, D) in the dtype of `x`, new state (B, D, N) in float32 or wider).

    Args:
        state (`torch.Tensor`): (B, D, N) state h_{t−1}.
        x, delta (`torch.Tensor`): (B, D) input and step size of step t.
        A (`torch.Tensor`): (D, N).
        B, C (`torch.Tensor`): (B, N).
    """
    out_dtype, dtype = x.dtype, torch.promote_types(x.dtype, torch.float32)
    state, x, delta, A, B, C = (t.to(dtype) for t in (state, x, delta, A, B, C))
    decay = torch.exp(delta[..., None] * A)  # (B, D, N)
    state = torch.addcmul(decay * state, (delta * x)[..., None], B[:, None, :])
    y = torch.bmm(state, C[..., None])[..., 0]  # (B, D)
    return y.to(out_dtype), state
