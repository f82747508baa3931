"""Compiled CPU selective scan, forward and backward (numba; optional, dispatched by :mod:`.selective_scan`).

Same maths and conventions as `ChunkedSelectiveScan` (h_t = exp(Δ_t A) ⊙ h_{t−1} + Δ_t x_t B_t, y_t = h_t C_t), but
fused: one pass over time per batch row, the state (N, D) of that row (16 KB at D = 256, N = 16 in float32) staying
in L1 cache, the exp, the update and the readout of an element in one vectorised loop over D. The torch path makes
about twenty memory passes over B·T·D·N elements instead.

Forward: y, the final state, and a checkpoint of the state every `chunk` steps (B·⌈T/chunk⌉·N·D floats; the
per-step states are never stored). Backward, per batch row and chunk from the last: recompute the chunk's states
and decays from its checkpoint into an (chunk + 1, N, D) buffer that stays in L2, then run the adjoint recurrence
dh_{t−1} = exp(Δ_t A) ⊙ (dh_t + C_t dy_t) backwards, accumulating every gradient on the way. The state is never
reconstructed by dividing by the decay (unstable where exp(Δ A) underflows).

float32 runs in float32 (as the torch path) with the vectorisable 2^w, softplus and sigmoid of
:mod:`.numba_math` (libm's, called per element, made the fused softplus cost more than the scan itself); ∂A
is summed in float64 across chunks. float64 runs in float64 with libm's exp2. The only fast-math flags are
`contract` (fused multiply-adds) everywhere and `reassoc` in the backward, whose sums over D per step (∂B, ∂C) LLVM
then vectorises into SIMD partial sums as BLAS would (accumulated in registers: 15-20 % faster than writing the
products to a row and summing it); inf, NaN and 0 are kept exact (no `nnan`/`ninf`). `error_model="numpy"` lets a
division (the sigmoid's) vectorise: the default checks it for a zero divisor element by element. Compiled on first
use and cached (`cache=True`).

Three of Mamba's elementwise steps are fused in, as mamba-ssm's kernel does (`D`, `delta_softplus`, `z`): Δ may
arrive before its softplus (the kernel applies softplus(r) = log1p(exp(r)), r above 20 passed through, as torch does,
one row of Δ values per step, and multiplies ∂Δ by its derivative, the sigmoid); the skip D ⊙ x_t starts each
y_t (∂x gains ∂y ⊙ D, ∂D is summed in float64); and the output may be gated, y_t ⊙ SiLU(z_t) (the ungated y is kept
for ∂z). Each saves passes over (B, T, D) tensors that cost more than the scan's own arithmetic at short lengths.
A zero D (no skip), `softplus=False` and `gated=False` leave the scan as it was.

Threads: torch's intra-op threads are the user's thread budget. Each kernel is single-threaded and releases the GIL
(`nogil=True`); with more than one torch thread the batch is cut into one slice of rows per thread
(`kernel_threads.run_sliced`), each slice scanned on its own thread. The rows are independent, so y, the states and
every per-row gradient are the same bits as one call; ∂A and ∂D are summed per slice (float64) and then across the
slices, which may change their last float32 bit. One thread, or a small input, runs one call as before.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from numba import njit
from torch.autograd.function import once_differentiable

from .kernel_threads import run_sliced, thread_count
from .numba_math import scan_exp2, scan_sigmoid, scan_softplus, scan_softplus_slope
from .precision import autocast_off

LOG2_E = 1 / math.log(2)
NUMBA_CHUNK_ELEMENTS = 2**16  # cap on chunk·N·D: the backward's state and decay buffers (fp32: 2 × 256 KB) stay in L2
FASTMATH = {"contract"}  # fused multiply-adds only: no reassociation, inf, NaN and 0 kept exact


@njit(cache=True, fastmath=FASTMATH, error_model="numpy", nogil=True)
def _step(delta_t, x_t, A_log2, B_t, previous, decay, state):
    """One step of one batch row, keeping its decays: decay = 2^(Δ_t A log2 e), state = decay ⊙ previous +
    B_t (Δ_t x_t)ᵀ. delta_t, x_t: (D,); B_t: (N,); A_log2, previous, decay, state: (N, D)."""
    for n in range(A_log2.shape[0]):
        b = B_t[n]
        for d in range(A_log2.shape[1]):
            decay[n, d] = scan_exp2(delta_t[d] * A_log2[n, d])
            state[n, d] = decay[n, d] * previous[n, d] + delta_t[d] * x_t[d] * b


@njit(cache=True, fastmath=FASTMATH, error_model="numpy", nogil=True)
def _delta_row(raw, softplus, out):
    """Δ_t (D,) into `out`: softplus(raw) (torch's threshold: r > 20 passes through) or `raw` itself."""
    for d in range(raw.shape[0]):
        r = raw[d]
        out[d] = scan_softplus(r) if softplus else r


@njit(cache=True, fastmath=FASTMATH, error_model="numpy", nogil=True)
def scan_forward(x, delta, A_log2, B, C, D, softplus, z, gated, state, y_scan, y, checkpoints, chunk):
    """Run the scan from `state` (B, N, D), updated in place to the final state; writes the scan's output y_scan
    (B, T, D), where `gated` also y = y_scan ⊙ SiLU(z) (else y may be y_scan itself), and the state before steps
    0, chunk, 2·chunk, … into checkpoints (B, ⌈T/chunk⌉, N, D). x, Δ, z: (B, T, D), Δ before its softplus where
    `softplus`; A_log2 = A·log2(e): (N, D); B, C: (B, T, N); D: (D,) skip weights (zeros for none)."""
    batch, length, channels = x.shape
    states = A_log2.shape[0]
    delta_t = np.empty(channels, x.dtype)
    for b in range(batch):
        h = state[b]  # (N, D)
        for t in range(length):
            if t % chunk == 0:
                checkpoints[b, t // chunk] = h
            _delta_row(delta[b, t], softplus, delta_t)
            x_t, y_t = x[b, t], y_scan[b, t]  # (D,) each
            for d in range(channels):
                y_t[d] = D[d] * x_t[d]
            for n in range(states):
                b_n, c_n, h_n, A_n = B[b, t, n], C[b, t, n], h[n], A_log2[n]
                for d in range(channels):
                    value = scan_exp2(delta_t[d] * A_n[d]) * h_n[d] + delta_t[d] * x_t[d] * b_n
                    h_n[d] = value
                    y_t[d] += value * c_n
            if gated:
                z_t, out_t = z[b, t], y[b, t]
                for d in range(channels):
                    out_t[d] = y_t[d] * z_t[d] * scan_sigmoid(z_t[d])  # y ⊙ SiLU(z)


@njit(cache=True, fastmath=FASTMATH | {"reassoc"}, error_model="numpy", nogil=True)
def scan_backward(
    x, delta, A, A_log2, B, C, D, softplus, z, gated, y_scan, checkpoints, chunk,
    grad_y, grad_state, grad_x, grad_delta, grad_A, grad_B, grad_C, grad_D, grad_z,
):  # fmt: skip
    """Gradients of the scan run by `scan_forward` (same shapes, A (N, D) next to A_log2, its D, `softplus`, z,
    `gated`, y_scan, `checkpoints` and `chunk`), given ∂y (B, T, D) and ∂(final state) `grad_state` (B, N, D), which
    is overwritten with ∂(initial state). Writes grad_x, grad_delta (B, T, D; ∂ of the raw Δ where `softplus`),
    grad_B, grad_C (B, T, N), where `gated` grad_z (B, T, D), and adds into grad_A (N, D) and grad_D (D,) (float64)."""
    batch, length, channels = x.shape
    states = A.shape[0]
    h = np.empty((chunk + 1, states, channels), x.dtype)  # states before and after each step of a chunk
    decay = np.empty((chunk, states, channels), x.dtype)
    deltas = np.empty((chunk, channels), x.dtype)  # the chunk's Δ rows (after the softplus)
    grad_A_chunk = np.empty((states, channels), x.dtype)
    rows = np.empty((4, channels), x.dtype)
    delta_x, grad_delta_x, grad_delta_t, grad_scan = rows[0], rows[1], rows[2], rows[3]
    for b in range(batch):
        adjoint = grad_state[b]  # (N, D): ∂loss/∂h_t from steps after t, then ∂loss/∂h_{t-1}
        for index in range(checkpoints.shape[1] - 1, -1, -1):
            start = index * chunk
            steps = min(chunk, length - start)
            h[0] = checkpoints[b, index]
            for j in range(steps):
                _delta_row(delta[b, start + j], softplus, deltas[j])
                _step(deltas[j], x[b, start + j], A_log2, B[b, start + j], h[j], decay[j], h[j + 1])
            grad_A_chunk[:] = 0
            for j in range(steps - 1, -1, -1):
                t = start + j
                delta_t, x_t, dy_t = deltas[j], x[b, t], grad_y[b, t]  # (D,) each
                if gated:  # ∂y_scan = ∂y ⊙ SiLU(z); ∂z = ∂y ⊙ y_scan ⊙ SiLU'(z), SiLU' = σ (1 + z (1 − σ))
                    z_t, y_t = z[b, t], y_scan[b, t]
                    for d in range(channels):
                        sigmoid = scan_sigmoid(z_t[d])
                        grad_scan[d] = dy_t[d] * z_t[d] * sigmoid
                        grad_z[b, t, d] = dy_t[d] * y_t[d] * sigmoid * (1 + z_t[d] * (1 - sigmoid))
                else:
                    grad_scan[:] = dy_t
                dy_t = rows[3]  # ∂y_scan (D,)
                for d in range(channels):
                    delta_x[d] = delta_t[d] * x_t[d]
                grad_delta_x[:] = 0
                grad_delta_t[:] = 0
                for n in range(states):
                    b_n, c_n = B[b, t, n], C[b, t, n]
                    a_n, h_n, previous_n, decay_n = adjoint[n], h[j + 1, n], h[j, n], decay[j, n]  # (D,) each
                    A_n, grad_A_n = A[n], grad_A_chunk[n]
                    sum_C = sum_B = x.dtype.type(0)
                    for d in range(channels):
                        g = a_n[d] + c_n * dy_t[d]  # ∂loss/∂h_t[n, d]
                        sum_C += h_n[d] * dy_t[d]
                        sum_B += g * delta_x[d]
                        grad_delta_x[d] += g * b_n
                        grad_log_decay = g * decay_n[d] * previous_n[d]  # ∂loss/∂(Δ_t A[n, d])
                        grad_delta_t[d] += grad_log_decay * A_n[d]
                        grad_A_n[d] += grad_log_decay * delta_t[d]
                        a_n[d] = g * decay_n[d]
                    grad_C[b, t, n] = sum_C
                    grad_B[b, t, n] = sum_B
                for d in range(channels):
                    grad_x[b, t, d] = grad_delta_x[d] * delta_t[d] + dy_t[d] * D[d]
                    grad_delta[b, t, d] = grad_delta_t[d] + grad_delta_x[d] * x_t[d]
                    grad_D[d] += dy_t[d] * x_t[d]
                if softplus:  # ∂softplus(r)/∂r
                    raw = delta[b, t]
                    for d in range(channels):
                        grad_delta[b, t, d] *= scan_softplus_slope(raw[d])
            grad_A += grad_A_chunk


class NumbaSelectiveScan(torch.autograd.Function):
    """Autograd function of the compiled scan on batch-first, contiguous inputs of one float dtype.

    forward(x, Δ (B, T, D), A (N, D), B, C (B, T, N), h0 (B, N, D) or None, chunk, D (D,) or None, softplus, z (B, T,
    D) or None) returns y (B, T, D) and the final state (B, N, D); with `softplus` Δ arrives before its softplus, with
    D the skip D ⊙ x is added to y, with z the output is gated, y ⊙ SiLU(z). Only first derivatives: the backward is
    not itself differentiable (no double backward).
    """

    @staticmethod
    @autocast_off
    def forward(ctx, x, delta, A, B, C, initial_state, chunk, D=None, softplus=False, z=None):
        batch, length, channels = x.shape
        state = x.new_zeros(batch, *A.shape) if initial_state is None else initial_state.clone()
        y_scan = x.new_empty(batch, length, channels)
        y = y_scan if z is None else torch.empty_like(y_scan)
        gate = x.new_empty(batch, 1, 1) if z is None else z.detach()  # (B, T, D), or a placeholder
        checkpoints = x.new_empty(batch, -(-length // chunk), *A.shape)
        A_log2 = A.detach() * LOG2_E  # (N, D): exp(Δ A) = 2^(Δ A log2 e), as in the torch path
        skip = x.new_zeros(channels) if D is None else D.detach().to(x.dtype).contiguous()  # (D,)
        shared = (A_log2.numpy(), skip.numpy(), bool(softplus))
        rows = [t.detach().numpy() for t in (x, delta, B, C, gate, state, y_scan, y, checkpoints)]

        def scan_rows(part, lo, hi):
            x_, delta_, B_, C_, gate_, *outputs = (a[lo:hi] for a in rows)
            scan_forward(x_, delta_, shared[0], B_, C_, *shared[1:], gate_, z is not None, *outputs, chunk)

        run_sliced(scan_rows, batch, thread_count(x.numel() * A.shape[0]))
        kept = y_scan if z is not None else gate  # the ungated output, only where ∂z needs it (else y itself)
        ctx.save_for_backward(x, delta, A, A_log2, B, C, skip, gate, kept, checkpoints)
        ctx.chunk, ctx.has_initial_state, ctx.softplus = chunk, initial_state is not None, bool(softplus)
        ctx.skip_dtype, ctx.gated = None if D is None else D.dtype, z is not None
        return y, state

    @staticmethod
    @once_differentiable
    @autocast_off
    def backward(ctx, grad_y, grad_state):
        x, delta, A, A_log2, B, C, skip, gate, y_scan, checkpoints = ctx.saved_tensors
        grad_y = torch.zeros_like(x) if grad_y is None else grad_y.contiguous()
        carry = x.new_zeros(x.shape[0], *A.shape) if grad_state is None else grad_state.contiguous().clone()
        grads = [torch.empty_like(t) for t in (x, delta, B, C, gate)]
        parts = thread_count(x.numel() * A.shape[0])
        grad_A, grad_D = (torch.zeros(parts, *shape, dtype=torch.float64) for shape in (A.shape, skip.shape))
        A_, A_log2_, skip_ = (t.detach().numpy() for t in (A, A_log2, skip))
        rows = [t.detach().numpy() for t in (x, delta, B, C, gate, y_scan, checkpoints, grad_y, carry, *grads)]

        def scan_rows(part, lo, hi):
            x_, delta_, B_, C_, gate_, y_scan_, checkpoints_, grad_y_, carry_, *grads_ = (a[lo:hi] for a in rows)
            inputs = (x_, delta_, A_, A_log2_, B_, C_, skip_, ctx.softplus, gate_, ctx.gated, y_scan_, checkpoints_)
            grad_x, grad_delta, grad_B, grad_C, grad_gate = grads_
            sum_A, sum_D = grad_A[part].numpy(), grad_D[part].numpy()
            outputs = (grad_y_, carry_, grad_x, grad_delta, sum_A, grad_B, grad_C, sum_D, grad_gate)
            scan_backward(*inputs, ctx.chunk, *outputs)

        run_sliced(scan_rows, x.shape[0], parts)
        grad_A, grad_D = grad_A.sum(0), grad_D.sum(0)  # (N, D), (D,): the slices' float64 sums
        grad_initial = carry if ctx.has_initial_state else None
        grad_skip = None if ctx.skip_dtype is None else grad_D.to(ctx.skip_dtype)
        grad_gate = grads[4] if ctx.gated else None
        return (
            grads[0],
            grads[1],
            grad_A.to(A.dtype),
            grads[2],
            grads[3],
            grad_initial,
            None,
            grad_skip,
            None,
            grad_gate,
        )
