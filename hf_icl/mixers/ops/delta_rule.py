"""The diagonal-plus-low-rank (DPLR) recurrence shared by DeltaNet, Gated DeltaNet and RWKV-7:

    S_t = (diag(d_t) + b_t a_tᵀ) S_{t−1} + k_t v_tᵀ,   o_t = q_tᵀ S_t,   d_t = exp(g_t) ∈ (0, 1]

with S (Dk, Dv) per head, g = 0 or one log decay per head or per key dimension. The delta rule (Yang et al., 2024,
"Parallelizing Linear Transformers with the Delta Rule over Sequence Length", eq. 1) is d = 1, b = −β k, a = k and
write key β k; the gated delta rule (Yang, Kautz & Hatamizadeh, 2025, eq. 10) multiplies the transition by a scalar
α_t per head: d = α, b = −α β k; RWKV-7 (Peng et al., 2025, eq. 16, transposed to S (Dk, Dv)) has a per-key-dim
decay d = w_t, b = κ̂ ⊙ a, a = −κ̂ (κ̂ the normalised removal key).

Chunked form (training; the WY/UT representation of the delta-rule papers, generalised to DPLR). Inside a chunk,
with γ_t = Π_{s ≤ t} d_s (every ratio γ_t/γ_j with j ≤ t is ≤ 1), the read w_t = a_tᵀ S_{t−1} of each step solves a
lower-triangular system, and everything else is a matmul:

    W = (I − A_ab)^{-1} (Â S_0 + A_ak V)                 Â = a ⊙ γ_{t−1}
    O = Q̂ S_0 + A_qb W + A_qk V                          Q̂ = q ⊙ γ_t
    S_C = diag(γ_C) S_0 + B̂ᵀ W + K̂ᵀ V                   B̂, K̂ = b, k ⊙ γ_C/γ_j
    A_xy[t, j] = Σ_d x_td y_jd γ_{t(−1),d}/γ_{j,d}       (j < t for A_ab, A_ak; j ≤ t for A_qb, A_qk)

so O = Q_eff S_0 + O_intra and S_C = P S_0 + H with Q_eff, O_intra, P, H computed for all chunks at once; only
`S ← P S + H` loops over chunks. With one decay per head the ratios form (C, C) masks exp(b_t − b_j) ≤ 1 (float64
prefix sums, any decay strength); with one per key dimension they are factored into x ⊙ γ and y / γ, which needs
|log γ| ≤ `SAFE_EXPONENT` inside a chunk (checked; RWKV-7's w ≥ −e^{−1/2} stays below 20 at C = 32).

Compiled CPU form (`dplr_numba.numba_dplr`, needs numba): the recurrence step by step, the state in L1 cache, with
checkpointed states for the backward; `dplr_recurrence` takes it on plain CPU tensors under `HF_ICL_SCAN_BACKEND`
(`cpu_paths.compiled_backend`), the chunked form otherwise. At the zoo recipe's shape (T ≈ 384, Dk = Dv = 32) it is
the cheaper form (`benchmarks/zoo_step_cost.py`).

Recurrent form (decoding): `dplr_step`, O(Dk·Dv) per token. On CUDA, flash-linear-attention's `chunk_delta_rule`,
`chunk_gated_delta_rule` and `chunk_rwkv7` are called by the mixers when they import; this file is their oracle.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from transformers import initialization as init

from .chunk_decays import SAFE_EXPONENT, HeadDecayMask, even_chunk_size
from .cpu_paths import compiled_backend
from .gated_rms_norm import gated_rms_norm
from .l2_norm import l2_normalize
from .mixing_maps import MixingMap, report_mixing_map
from .padding import token_mask, zero_padding
from .residual import residual_projection
from .short_conv import CausalDepthwiseConv

try:
    from .dplr_numba import numba_dplr
except ImportError:  # numba is missing: the chunked torch form
    numba_dplr = None

try:  # pragma: no cover - CUDA only
    from fla.ops.delta_rule import chunk_delta_rule
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule

    _FLA_DELTA = True
except Exception:  # ImportError; fla imports on a CPU-only machine with Triton, but its kernels cannot launch there
    chunk_delta_rule = chunk_gated_delta_rule = _FLA_DELTA = None


def _chunks(x, n, size):
    """(B, H, T, D) → (B, H, N, C, D) float32, zero-padded to N·C positions."""
    x = x.float()
    if n * size > x.shape[2]:
        x = F.pad(x, (0, 0, 0, n * size - x.shape[2]))
    return x.reshape(*x.shape[:2], n, size, -1)


def _decay_products(g, n, size):
    """Per-chunk decays from log decays g (B, H, T, G): the float64 prefix sums b_t (B, H, N, C, G)."""
    return _chunks(g, n, size).double().cumsum(dim=3)


def dplr_chunked(q, k, v, a, b, log_decay=None, chunk_size: int = 64, initial_state=None, b_scale=None):
    """Chunked form of `S_t = (diag(exp g_t) + b_t a_tᵀ) S_{t−1} + k_t v_tᵀ`, `o_t = q_tᵀ S_t`.

    Args:
        q, k, a, b: (B, H, T, Dk).
        v: (B, H, T, Dv).
        log_decay: g ≤ 0: `None`, (B, H, T, 1) (one decay per head) or (B, H, T, Dk) (per key dimension).
        chunk_size: chunk length C.
        initial_state: (B, H, Dk, Dv) or `None` for zeros.
        b_scale: `None`, or s (a number or (B, H, T, 1)) where b_t = s_t k_t, as in the delta rule (b = −α β k, the
            write key β k): the (C, C) products of b are then those of k scaled by column, and the state's
            transition and update share one product, 8 batched products a chunk instead of 13 (`b` is not read).

    Returns:
        `(out (B, H, T, Dv) in v's dtype, final_state (B, H, Dk, Dv) float32)`.
    """
    batch, heads, length, dk = q.shape
    size = even_chunk_size(length, chunk_size)
    n = -(-length // size)
    with torch.autocast(q.device.type, enabled=False):
        q, k, v, a, b = (_chunks(x, n, size) for x in (q, k, v, a, b))  # (B, H, N, C, ·)
        causal = torch.ones(size, size, dtype=torch.bool, device=q.device).tril()  # j ≤ t
        strict = causal.tril(-1)  # j < t
        if log_decay is None:
            gamma = None
            masks = (causal.float(), strict.float())
        else:
            cum = _decay_products(log_decay.expand(batch, heads, length, -1), n, size)  # (B, H, N, C, G)
            previous = F.pad(cum, (0, 0, 1, 0))[..., :-1, :]  # b_{t−1}
            gamma = cum.float().exp()
            if cum.shape[-1] == 1:  # one decay per head: (C, C) masks of ratios ≤ 1
                cum, previous = cum[..., 0], previous[..., 0]
                masks = (
                    HeadDecayMask.apply(cum, cum, causal),  # exp(b_t − b_j), j ≤ t
                    HeadDecayMask.apply(previous, cum, strict),  # exp(b_{t−1} − b_j), j < t
                )
            else:  # per key dimension: factor the ratios into the two sides
                if bool((cum[..., -1, :] < -SAFE_EXPONENT).any()):
                    raise ValueError(
                        f"per-key-dim decays sum below -{SAFE_EXPONENT} inside a chunk of {size}; use a shorter "
                        "chunk_size (the factored form would overflow)"
                    )
                masks = None
        scale = None
        if b_scale is not None and masks is not None:  # b = s ⊙ k: the products of k serve b too
            scale = _chunks(torch.as_tensor(b_scale, device=q.device).expand(batch, heads, length, 1), n, size)
        if masks is not None:
            full, below = masks
            q_hat = q if gamma is None else q * gamma
            a_hat = a if gamma is None else a * F.pad(gamma, (0, 0, 1, 0), value=1.0)[..., :-1, :]
            to_end = None if gamma is None else (cum[..., -1:] - cum).float().exp()[..., None]  # γ_C/γ_j
            a_ak = (a @ k.transpose(-1, -2)) * below  # (B, H, N, C, C)
            a_qk = (q @ k.transpose(-1, -2)) * full
            if scale is None:
                a_ab = (a @ b.transpose(-1, -2)) * below
                a_qb = (q @ b.transpose(-1, -2)) * full
            else:
                row = scale.transpose(-1, -2)  # (B, H, N, 1, C): s_j by column
                a_ab, a_qb = a_ak * row, a_qk * row
        else:
            inverse = (-cum).float().exp()  # 1/γ_j ≤ e^SAFE_EXPONENT
            q_hat = q * gamma
            a_hat = a * F.pad(gamma, (0, 0, 1, 0), value=1.0)[..., :-1, :]
            to_end = (cum[..., -1:, :] - cum).float().exp()  # (B, H, N, C, Dk)
            a_ab = torch.tril(a_hat @ (b * inverse).transpose(-1, -2), -1)
            a_ak = torch.tril(a_hat @ (k * inverse).transpose(-1, -2), -1)
            a_qb = torch.tril(q_hat @ (b * inverse).transpose(-1, -2))
            a_qk = torch.tril(q_hat @ (k * inverse).transpose(-1, -2))
        k_end = k if to_end is None else k * to_end  # K̂
        eye = torch.eye(size, device=q.device)
        solved = torch.linalg.solve_triangular(  # (I − A_ab)^{-1} [Â | A_ak V]
            eye - a_ab, torch.cat([a_hat, a_ak @ v], dim=-1), upper=False, unitriangular=True
        )
        w_state, w_values = solved.split([dk, v.shape[-1]], dim=-1)  # W = w_state S_0 + w_values
        read = a_qb @ solved  # (B, H, N, C, Dk + Dv)
        query_eff = q_hat + read[..., :dk]  # (B, H, N, C, Dk)
        out_intra = read[..., dk:] + a_qk @ v  # (B, H, N, C, Dv)
        if scale is None:
            b_end = b if to_end is None else b * to_end  # B̂
            transition = b_end.transpose(-1, -2) @ w_state  # (B, H, N, Dk, Dk): P − diag(γ_C)
            update = b_end.transpose(-1, -2) @ w_values + k_end.transpose(-1, -2) @ v  # H (B, H, N, Dk, Dv)
        else:  # B̂ = s ⊙ K̂: P − diag(γ_C) and H from one product
            both = k_end.transpose(-1, -2) @ torch.cat([scale * w_state, scale * w_values + v], dim=-1)
            transition, update = both.split([dk, v.shape[-1]], dim=-1)
        if gamma is None:
            transition = transition + eye.new_ones(dk).diag()
        else:
            transition = transition + torch.diag_embed(gamma[..., -1, :].expand(*gamma.shape[:3], dk))
        state = q.new_zeros(batch, heads, dk, v.shape[-1]) if initial_state is None else initial_state.float()
        starts = []
        for i in range(n):
            starts.append(state)
            state = transition[:, :, i] @ state + update[:, :, i]
        starts = torch.stack(starts, dim=2)  # (B, H, N, Dk, Dv): S_0 of every chunk
        out = query_eff @ starts + out_intra
    out = out.reshape(batch, heads, n * size, -1)[:, :, :length]
    return out.to(v.dtype), state


def dplr_step(q, k, v, a, b, log_decay=None, state=None):
    """One step, O(Dk·Dv): q, k, a, b (B, H, Dk); v (B, H, Dv); log_decay `None`, (B, H, 1) or (B, H, Dk).

    Returns:
        `(out (B, H, Dv), new_state (B, H, Dk, Dv) float32)`.
    """
    q, k, v, a, b = (x.float() for x in (q, k, v, a, b))
    if state is None:
        state = q.new_zeros(*q.shape, v.shape[-1])
    state = state.float()
    read = (a[..., None, :] @ state)[..., 0, :]  # w = aᵀ S (B, H, Dv)
    decayed = state if log_decay is None else log_decay.float().exp()[..., None] * state
    state = decayed + b[..., :, None] * read[..., None, :] + k[..., :, None] * v[..., None, :]
    return (q[..., None, :] @ state)[..., 0, :], state


def dplr_recurrence(q, k, v, a, b, log_decay=None, mask=None, state=None, chunk_size: int = 64, b_scale=None):
    """The mixers' entry point: padding, cache prefill/continuation and the choice of form.

    Padded positions are no-ops (k = b = 0: nothing written, no low-rank update; decay 1), so a left-padded row
    leaves exactly the state of the unpadded row.

    Args:
        q, k, a, b: (B, H, T, Dk); v: (B, H, T, Dv); log_decay as in `dplr_chunked`.
        mask: (B, T) boolean mask of real tokens, or `None`.
        state: the layer's `MixerState` or `None`; its tensor "state" (B, H, Dk, Dv) is continued and replaced.
        chunk_size: chunk length of the chunked form.
        b_scale: as in `dplr_chunked` (b = b_scale ⊙ k; padding zeroes k and b alike).

    Returns:
        out (B, H, T, Dv).
    """
    if mask is not None:
        k, b = (zero_padding(x.transpose(1, 2), mask).transpose(1, 2) for x in (k, b))
        if log_decay is not None:
            log_decay = log_decay * mask[:, None, :, None].to(log_decay.dtype)
    previous = state.get("state") if state is not None else None
    if previous is not None and q.shape[2] == 1:
        g = None if log_decay is None else log_decay[:, :, 0]
        out, final = dplr_step(q[:, :, 0], k[:, :, 0], v[:, :, 0], a[:, :, 0], b[:, :, 0], g, previous)
        out = out[:, :, None].to(v.dtype)
    elif compiled_backend(numba_dplr is not None, q, k, v, a, b, log_decay, previous) == "numba":
        out, final = numba_dplr(q, k, v, a, b, log_decay, previous)
    else:
        out, final = dplr_chunked(q, k, v, a, b, log_decay, chunk_size, previous, b_scale)
    if state is not None:
        state.set("state", final)
    return out


def dplr_map(q, k, a, b, log_decay=None, mask=None, chunk_size: int = 64):
    """The exact token-mixing map M (B, H, T, T), o_t = Σ_j M_tj v_j, of `dplr_recurrence` from a zero state.

    The output is linear in v, so M is the chunked form applied to one-hot values (v_j = e_j): the same safe
    products, nothing exponentiated beyond them.
    """
    length = q.shape[2]
    eye = torch.eye(length, device=q.device, dtype=torch.float32).expand(*q.shape[:2], length, length)
    return dplr_recurrence(q, k, eye, a, b, log_decay, mask=mask, chunk_size=chunk_size)


class DeltaRuleMixer(nn.Module):
    """The body DeltaNet and Gated DeltaNet share (flash-linear-attention's `DeltaNet` / `GatedDeltaNet` layers):

        q, k, v = SiLU(ShortConv(W_q x, W_k x, W_v x)),   q, k ← q/‖q‖, k/‖k‖ per head,   q ← q/√Dk
        β = σ(W_β x) per head;   gated: α = exp(−exp(A_log) · softplus(W_α x + b_dt)) per head
        S_t = α_t (I − β_t k_t k_tᵀ) S_{t−1} + β_t k_t v_tᵀ,   o_t = q_tᵀ S_t            (α = 1 without the gate)
        y = W_o RMSNorm_head(o)          gated: y = W_o (RMSNorm_head(o) ⊙ SiLU(W_g x))

    Normalised keys make I − β k kᵀ a contraction for β ∈ (0, 1), so the state stays bounded (the delta rule's
    convention). The recurrence is `dplr_recurrence` with d = α, b = −α β k, a = k and write key β k.

    Args:
        config: an `ICLConfig` (uses hidden_size, num_attention_heads, use_bias, conv_kernel, scan_chunk_size,
            layer_norm_epsilon).
        layer_idx (`int`): index of the layer, used to find this layer's state in the cache.
        gated (`bool`): the gated delta rule (a decay α and an output gate).
    """

    recurrent = True  # short-convolution window + S
    returns_attention_maps = False  # not softmax: the exact map comes from `mixing_map`
    mixing_maps = True
    map_axis = "heads"

    def __init__(self, config, layer_idx: int, gated: bool):
        super().__init__()
        self.layer_idx, self.gated = layer_idx, gated
        self.chunk_size, self.eps = config.scan_chunk_size, config.layer_norm_epsilon
        width, bias = config.hidden_size, config.use_bias
        self.num_heads = config.num_attention_heads
        self.head_dim = width // self.num_heads
        self.q_proj = nn.Linear(width, width, bias=bias)
        self.k_proj = nn.Linear(width, width, bias=bias)
        self.v_proj = nn.Linear(width, width, bias=bias)
        self.b_proj = nn.Linear(width, self.num_heads, bias=bias)  # β
        self.conv = CausalDepthwiseConv(3 * width, config.conv_kernel, bias=False)  # q, k, v short convolutions
        self.norm_weight = nn.Parameter(torch.ones(self.head_dim))  # RMSNorm over each head's outputs
        if gated:
            self.a_proj = nn.Linear(width, self.num_heads, bias=False)  # α's input
            self.A_log = nn.Parameter(torch.empty(self.num_heads))
            self.dt_bias = nn.Parameter(torch.empty(self.num_heads))
            self.g_proj = nn.Linear(width, width, bias=bias)  # output gate
        self.out_proj = residual_projection(nn.Linear(width, width, bias=bias))

    @torch.no_grad()
    def reset_mixer_parameters(self) -> None:
        """flash-linear-attention's init: A ~ U(0, 16), Δ log-uniform in [1e-3, 1e-1] through softplus⁻¹."""
        conv = self.conv.conv
        init.kaiming_uniform_(conv.weight, a=math.sqrt(5))
        init.ones_(self.norm_weight)
        if self.gated:
            init.copy_(self.A_log, torch.empty(self.num_heads).uniform_(0, 16).clamp(min=1e-4).log())
            dt = torch.exp(torch.rand(self.num_heads) * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3))
            dt = dt.clamp(min=1e-4)
            init.copy_(self.dt_bias, dt + torch.log(-torch.expm1(-dt)))

    def state_size(self) -> int:
        return self.conv.state_bytes() + self.num_heads * self.head_dim * self.head_dim * 4

    def coefficients(self, hidden_states, mask, state):
        """q, write key, v, a, b (B, H, T, D) and the log decay (B, H, T, 1) or `None` of `dplr_recurrence`."""
        batch, length, width = hidden_states.shape
        qkv = torch.cat([self.q_proj(hidden_states), self.k_proj(hidden_states), self.v_proj(hidden_states)], -1)
        qkv = F.silu(self.conv(zero_padding(qkv, mask), state))  # (B, T, 3d)
        heads = (batch, length, self.num_heads, self.head_dim)
        q, k, v = (part.reshape(heads) for part in qkv.split(width, dim=-1))  # (B, T, H, D)
        q, k = l2_normalize(q, self.head_dim**-0.5), l2_normalize(k)  # contiguous (B, T, H, D)
        q, k, v = (x.transpose(1, 2) for x in (q, k, v))  # (B, H, T, D)
        beta = torch.sigmoid(self.b_proj(hidden_states)).transpose(1, 2)[..., None]  # (B, H, T, 1)
        log_decay, remove = None, -beta * k
        if self.gated:
            rate = F.softplus(self.a_proj(hidden_states).float() + self.dt_bias)  # (B, T, H)
            log_decay = (-self.A_log.float().exp() * rate).transpose(1, 2)[..., None]  # (B, H, T, 1): log α ≤ 0
            remove = remove * log_decay.exp()
        return q, beta * k, v, k, remove, log_decay

    def finish(self, out, hidden_states):
        """W_o (RMSNorm per head, ⊙ SiLU(W_g x) when gated) of o (B, H, T, Dv)."""
        out = out.transpose(1, 2)  # (B, T, H, Dv)
        if self.gated:  # fla's FusedRMSNormGated: the norm, then the SiLU gate
            gate = self.g_proj(hidden_states).view(out.shape)  # (B, T, H, Dv)
            out = gated_rms_norm(out, gate, self.norm_weight, self.eps, gate_first=False)
        else:
            out = F.rms_norm(out, (self.head_dim,), self.norm_weight, self.eps)
        return self.out_proj(out.reshape(*hidden_states.shape[:2], -1))  # (B, T, d)

    def forward(
        self, hidden_states, attention_mask=None, cache=None, input_ids=None, position_ids=None, recorder=None, **kw
    ):
        mask = token_mask(attention_mask, hidden_states.shape[1])
        report_mixing_map(self, hidden_states, attention_mask, cache, recorder)
        state = cache.layer_state(self.layer_idx) if cache is not None else None
        q, k, v, a, b, g = self.coefficients(hidden_states, mask, state)
        if use_fla_kernel(q, state, _FLA_DELTA):  # pragma: no cover - CUDA only
            out = _fla_delta_rule(q, k, v, a, b, g, mask, state)
        else:
            scale = -1.0 if g is None else -g.exp()  # b = −α β k = s ⊙ (β k), the write key
            out = dplr_recurrence(q, k, v, a, b, g, mask, state, self.chunk_size, scale)  # (B, H, T, Dv)
        return self.finish(out, hidden_states)

    def mixing_map(self, hidden_states, mask=None) -> MixingMap:
        q, k, v, a, b, g = self.coefficients(hidden_states, mask, None)
        out = dplr_recurrence(q, k, v, a, b, g, mask, None, self.chunk_size)
        return MixingMap(dplr_map(q, k, a, b, g, mask, self.chunk_size), v, out)


def use_fla_kernel(q, state, kernel) -> bool:
    """Whether a prefill goes to flash-linear-attention: on CUDA, in half precision, when the kernel imported.

    fla imports on a CPU-only machine that has Triton (its kernels then fail at launch), so the device is checked as
    well as the import; its delta-rule kernels refuse float32 (an assertion in fla 0.6), so fp32 runs the pure path.
    """
    fresh = state is None or state.get("state") is None
    return q.is_cuda and q.dtype in (torch.float16, torch.bfloat16) and kernel is not None and fresh


def _fla_delta_rule(q, k, v, a, b, log_decay, mask, state):  # pragma: no cover - CUDA only
    """flash-linear-attention's chunk kernels on a prefill: (gated) delta rule with β = write key / a (a = k)."""
    if mask is not None:
        k, b = (zero_padding(x.transpose(1, 2), mask).transpose(1, 2) for x in (k, b))
        log_decay = None if log_decay is None else log_decay * mask[:, None, :, None].to(log_decay.dtype)
    beta = (k * a).sum(-1)  # β ‖a‖² = β for unit a (zero at padding)
    q, a, v = (x.transpose(1, 2) for x in (q, a, v))  # (B, T, H, D)
    if log_decay is None:
        out, final = chunk_delta_rule(q, a, v, beta.transpose(1, 2), scale=1.0, output_final_state=True)
    else:
        g = log_decay[..., 0].transpose(1, 2).float()  # (B, T, H)
        out, final = chunk_gated_delta_rule(q, a, v, g, beta.transpose(1, 2), scale=1.0, output_final_state=True)
    if state is not None:
        state.set("state", final.float())
    return out.transpose(1, 2)
