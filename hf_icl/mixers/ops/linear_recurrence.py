"""The linear recurrence shared by linear attention, RetNet and GLA (paper 1, Appendix A.4–A.6):

    S_t = diag(a_t) S_{t−1} + k_tᵀ v_t,   o_t = q_t S_t,   a_t = exp(g_t) ∈ (0, 1]^{Dk}

with g = 0 (linear attention, eq. 30), g_t = log λ_h fixed per head (RetNet, eq. 41) or g_t data-dependent per
key dimension (GLA, eq. 46 with β = 1).

Chunked form (training): cut T into chunks of C positions. With b_i = Σ_{s ≤ i} g_s inside the chunk,

    o_i = Σ_{j ≤ i in chunk} (q_i ⊙ k_j · exp(b_i − b_j)) v_j   (intra: attention-style, decay mask)
        + (q_i ⊙ exp(b_i)) S_prev                                 (inter: the state entering the chunk)
    S_next = diag(exp(b_C)) S_prev + Σ_j (k_j ⊙ exp(b_C − b_j))ᵀ v_j

The decays are prepared per chunk in `chunk_decays` (float64 prefix sums, every exponent ≤ 0: a (C, C) decay
mask per head, or exp(b_i) · exp(−b_j) factored into q and k per key dimension, tiled into 16-step sub-chunks on
chunks that decay too hard), and the matmuls of all chunks run at once in `chunk_states.ChunkStates`, whose
hand-written backward keeps the training step close to its matmul cost; only the state hand-over loops over chunks
in Python, time steps are never looped over.

`GatedLinearRecurrenceMixer` is the body RetNet's retention and GLA share around the recurrence.

Compiled CPU form (`dplr_numba.numba_dplr` without its low-rank term, needs numba): the recurrence step by step with
the state in L1 cache; `linear_recurrence` takes it on plain CPU tensors under `HF_ICL_SCAN_BACKEND`
(`cpu_paths.compiled_backend`) for states of at most `COMPILED_MAX_STATE` numbers, the chunked form otherwise.
Where every head shares q and k and decays by a scalar (Mamba-2), `shared_key_numba` runs the heads as the columns
of one state per batch row instead.

Recurrent form (decoding): `recurrent_step`, O(Dk·Dv) per token. On CUDA, `chunked_linear_attention` dispatches to
flash-linear-attention's chunk kernels (`chunk_simple_gla` for none/scalar decays, `chunk_gla` per key dim) when
they import; the pure path below is their oracle.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .chunk_decays import HeadDecayMask, KeyDimDecays, even_chunk_size, head_decays, key_dim_scores, tiled_scores
from .chunk_states import ChunkStates
from .cpu_paths import compiled_backend
from .mixing_maps import MixingMap, causal_key_mask, report_mixing_map
from .padding import token_mask, zero_padding
from .residual import residual_projection

# The largest Dk·Dv taken by the compiled recurrence (zoo_step_cost: Mamba-2's 64 × 32 state gains from it, Based's
# 153 × 33 Taylor-feature state loses to the chunked form's matmuls).
COMPILED_MAX_STATE = 4096

try:
    from .dplr_numba import numba_dplr
    from .shared_key_numba import shared_key_recurrence
except ImportError:  # numba is missing: the chunked torch form
    numba_dplr = shared_key_recurrence = None

try:  # pragma: no cover - CUDA only
    from fla.ops.gla import chunk_gla
    from fla.ops.simple_gla import chunk_simple_gla
except Exception:  # ImportError, or Triton failing to initialise without a GPU
    chunk_gla = chunk_simple_gla = None


def _fla_chunked(q, k, v, g, initial_state):  # pragma: no cover - CUDA only
    """fla kernels in their (B, T, H, D) layout; `g` is None, (B, H, T, 1) or (B, H, T, Dk); scale is applied."""
    q, k, v = (x.transpose(1, 2) for x in (q, k, v))  # (B, T, H, D)
    state = None if initial_state is None else initial_state.float()
    if g is not None and g.shape[-1] > 1:
        out, final = chunk_gla(q, k, v, g.transpose(1, 2), scale=1.0, initial_state=state, output_final_state=True)
    else:
        g = None if g is None else g[..., 0].transpose(1, 2)  # (B, T, H)
        out, final = chunk_simple_gla(q, k, v, g=g, scale=1.0, initial_state=state, output_final_state=True)
    return out.transpose(1, 2), final


def _in_chunks(x, n, size):
    """(B, H, T, D) → contiguous float32 (B, H, N, C, D), zero-padded to N·C positions, with a single copy."""
    x = x.float().contiguous()
    if n * size > x.shape[2]:
        x = F.pad(x, (0, 0, 0, n * size - x.shape[2]))
    return x.view(*x.shape[:2], n, size, -1)


def chunked_linear_attention(q, k, v, log_decay=None, chunk_size: int = 64, initial_state=None):
    """Chunked parallel form of `S_t = diag(exp(g_t)) S_{t−1} + k_tᵀ v_t`, `o_t = q_t S_t`.

    Args:
        q, k: (B, H, T, Dk) queries and keys (any scaling already applied to q).
        v: (B, H, T, Dv) values.
        log_decay: g ≤ 0, `None` (no decay) or broadcastable to (B, H, T, 1) (one decay per head, fixed or
            data-dependent) or to (B, H, T, Dk) (one per key dimension).
        chunk_size: the largest chunk length; T is cut into ⌈T / chunk_size⌉ equal chunks (`even_chunk_size`).
        initial_state: (B, H, Dk, Dv) state before the first position, or `None` for zeros.

    Returns:
        `(out, final_state)`: out (B, H, T, Dv) in v's dtype; final_state (B, H, Dk, Dv) in float32.
    """
    batch, heads, length, dk = q.shape
    if q.is_cuda and chunk_simple_gla is not None:  # pragma: no cover - CUDA only
        g = None if log_decay is None else log_decay.float()
        if g is not None:
            g = g.expand(batch, heads, length, dk if g.shape[-1] == dk else 1)  # (B, H, T, 1|Dk)
        return _fla_chunked(q, k, v, g, initial_state)
    with torch.autocast(q.device.type, enabled=False):  # under mixed precision the recurrence stays in float32
        out, state = _chunked(q, k, v, log_decay, even_chunk_size(length, chunk_size), initial_state)
    return out.to(v.dtype), state


def _chunked(q, k, v, log_decay, size, initial_state):
    """The pure path of `chunked_linear_attention` with chunks of `size`; returns out (B, H, T, Dv) in float32."""
    batch, heads, length, dk = q.shape
    n = -(-length // size)
    # one q and k for every head (Mamba-2's C and B, expanded): chunk them once, not once per head
    shared = heads > 1 and q.stride(1) == 0 and k.stride(1) == 0
    q, k = (_in_chunks(x[:, :1] if shared else x, n, size) for x in (q, k))  # (B, H|1, N, C, Dk)
    v = _in_chunks(v, n, size)  # (B, H, N, C, Dv), contiguous
    state = None if initial_state is None else initial_state.float()
    causal = torch.ones(size, size, dtype=torch.bool, device=q.device).tril()  # (C, C): j ≤ i
    g = None if log_decay is None else log_decay.float().reshape((1,) * (4 - log_decay.dim()) + log_decay.shape)
    # g: (B|1, H|1, T|1, 1|Dk)
    if g is not None and g.shape[-1] == 1 and g.requires_grad:  # one data-dependent decay per head (Mamba-2)
        # (C, C) decay masks with autograd through them; a shared q and k take one (C, C) product for all heads
        b = _in_chunks(g.expand(batch, heads, length, 1), n, size).double().cumsum(dim=3)  # (B, H, N, C, 1)
        total = b[:, :, :, -1:]  # (B, H, N, 1, 1)
        decays = HeadDecayMask.apply(b[..., 0], b[..., 0], causal)  # (B, H, N, C, C): exp(b_i − b_j), j ≤ i
        scores = (q @ k.transpose(-1, -2)) * decays
        q_decayed, k_state = q * b.float().exp(), k * (total - b).float().exp()  # (B, H, N, C, Dk)
        out, state = ChunkStates.apply(q_decayed, k_state, v, scores, None, None, None, total.float().exp(), state)
        return _from_chunks(out, length), state
    if shared:
        q, k = (x.expand(-1, heads, -1, -1, -1).contiguous() for x in (q, k))  # (B, H, N, C, Dk)
    if log_decay is None:
        out, state = ChunkStates.apply(q, k, v, None, causal.float(), None, None, None, state)
        return _from_chunks(out, length), state
    if g.shape[-1] == 1:  # a (C, C) decay mask per head, applied inside ChunkStates
        mask, *scales, decay = head_decays(g, batch, length, size, causal)
        out, state = ChunkStates.apply(q, k, v, None, mask, *scales, decay.transpose(-1, -2), state)
        return _from_chunks(out, length), state
    g = _in_chunks(g.expand(batch, heads, length, dk), n, size)  # (B, H, N, C, Dk)
    q_decayed, k_intra, k_state, decay, b = KeyDimDecays.apply(q, k, g)
    scores = key_dim_scores(q, k, q_decayed, k_intra, b, causal)  # (B, H, N, C, C)
    out, state = ChunkStates.apply(q_decayed, k_state, v, scores, None, None, None, decay.transpose(-1, -2), state)
    return _from_chunks(out, length), state


def _from_chunks(out, length):
    """(B, H, N, C, Dv) → (B, H, T, Dv), dropping the padded tail."""
    out = out.view(*out.shape[:2], -1, out.shape[-1])
    return out[:, :, :length] if out.shape[2] > length else out


def recurrent_step(q, k, v, log_decay=None, state=None):
    """One step of the recurrence, O(Dk·Dv): the decoding form.

    Args:
        q, k: (B, H, Dk); v: (B, H, Dv).
        log_decay: `None` or g ≤ 0 broadcastable to (B, H, 1) or (B, H, Dk).
        state: (B, H, Dk, Dv) or `None` for zeros.

    Returns:
        `(out (B, H, Dv), new_state (B, H, Dk, Dv) float32)`.
    """
    if state is None:
        state = q.new_zeros(*q.shape, v.shape[-1], dtype=torch.float32)
    state = state.float()
    if log_decay is not None:
        state = log_decay.float().exp()[..., None] * state
    state = state + k.float()[..., :, None] * v.float()[..., None, :]  # (B, H, Dk, Dv)
    out = (q.float()[..., None, :] @ state)[..., 0, :]  # (B, H, Dv)
    return out.to(v.dtype), state


def shares_keys(q, k, v, log_decay) -> bool:
    """True where every head reads the same q and k (one head broadcast over v's heads, or expanded over them: stride
    0) and decays by one scalar per head: Mamba-2's SSD, which `shared_key_numba` runs as one state per batch row."""
    return (
        v.shape[1] > 1
        and all(x.shape[1] == 1 or x.stride(1) == 0 for x in (q, k))
        and log_decay is not None
        and log_decay.dim() == 4
        and log_decay.shape[-1] == 1
    )


def linear_recurrence(q, k, v, log_decay=None, mask=None, state=None, chunk_size: int = 64):
    """The mixers' entry point: padding, cache prefill/continuation, and the choice of form.

    Padded positions are no-ops: their key is zeroed (nothing enters the state) and their decay set to 1 (the
    state does not fade), so a left-padded row, or a padding token decoded through the cache, leaves exactly the
    state of the unpadded row.

    Args:
        q, k: (B, H|1, T, Dk), one head broadcast over v's (B, H, T, Dv); log_decay as in
            `chunked_linear_attention`.
        mask: (B, T) boolean mask of real tokens (`ops.padding.token_mask`), or `None`.
        state: the layer's `MixerState`, or `None` without a cache. Its tensor "state" (B, H, Dk, Dv) is
            continued from when present and replaced by the final state.
        chunk_size: chunk length of the chunked form.

    Returns:
        out (B, H, T, Dv).
    """
    if mask is not None:
        shared = k.shape[1] > 1 and k.stride(1) == 0  # zero one head's keys, then share them again
        k_masked = zero_padding((k[:, :1] if shared else k).transpose(1, 2), mask).transpose(1, 2)  # (B, H|1, T, Dk)
        k = k_masked.expand_as(k) if shared else k_masked  # (B, H, T, Dk)
        if log_decay is not None:
            log_decay = log_decay * mask[:, None, :, None].to(log_decay.dtype)  # (B, H, T, 1|Dk)
    previous = state.get("state") if state is not None else None
    out, final = _recurrence(q, k, v, log_decay, previous, chunk_size)
    if state is not None:
        state.set("state", final)
    return out


def _recurrence(q, k, v, log_decay, previous, chunk_size):
    """out (B, H, T, Dv) and the final state by the cheapest exact form for these inputs (padding already applied)."""
    decoding = previous is not None and q.shape[2] == 1
    if not decoding and shares_keys(q, k, v, log_decay):
        if compiled_backend(shared_key_recurrence is not None, q, k, v, log_decay, previous) == "numba":
            return shared_key_recurrence(q, k, v, log_decay, previous)  # Mamba-2: heads as columns of one state
    q, k = (x.expand(-1, v.shape[1], -1, -1) for x in (q, k))  # (B, H, T, Dk)
    if decoding:
        step_decay = None if log_decay is None else log_decay.expand(*q.shape[:3], -1)[:, :, 0]
        out, final = recurrent_step(q[:, :, 0], k[:, :, 0], v[:, :, 0], step_decay, previous)
        return out[:, :, None], final  # (B, H, 1, Dv)
    if (
        q.shape[-1] * v.shape[-1] <= COMPILED_MAX_STATE
        and compiled_backend(numba_dplr is not None, q, k, v, log_decay, previous) == "numba"
    ):
        return numba_dplr(q, k, v, None, None, log_decay, previous)  # no low-rank term
    return chunked_linear_attention(q, k, v, log_decay, chunk_size, previous)


def linear_recurrence_map(q, k, log_decay=None, mask=None):
    """The exact map M (B, H, T, T) of `linear_recurrence`: M_tj = Σ_d q_td k_jd exp(b_td − b_jd) for j ≤ t.

    One decay per head: a (T, T) mask of float64 prefix-sum differences (≤ 0 where j ≤ t). Per key dimension: the
    sub-chunk tiling of `chunk_decays.tiled_scores` on the whole sequence, every factor ≤ 1 or clamped where exact.

    Args:
        q, k: (B, H, T, Dk); log_decay as in `chunked_linear_attention`; mask: (B, T) real tokens or `None`.
    """
    batch, heads, length, dk = q.shape
    q, k = q.float(), k.float()
    allowed = causal_key_mask(mask, length, q.device)  # (B|1, 1, T, T)
    if log_decay is None:
        return (q @ k.transpose(-1, -2)) * allowed
    g = log_decay.float().expand(batch, heads, length, -1)
    if mask is not None:
        g = g * mask[:, None, :, None]
    b = g.double().cumsum(2)  # (B, H, T, 1|Dk)
    if g.shape[-1] == 1:
        decay = (b[..., 0, None] - b[..., None, :, 0]).float().masked_fill(allowed == 0, float("-inf")).exp()
        return (q @ k.transpose(-1, -2)) * decay
    scores = tiled_scores(q.reshape(-1, length, dk), k.reshape(-1, length, dk), b.reshape(-1, length, dk))
    return scores.view(batch, heads, length, length) * allowed


class GatedLinearRecurrenceMixer(nn.Module):
    """The body RetNet's retention and GLA share (paper 1, eqs. 32–38 and 43–49): q (scaled by 1/√Dk), k and v per
    head, the recurrence with the subclass's decay, a per-head norm without affine parameters, the swish output
    gate and W_o: `y = W_o (swish(W_r x) ⊙ Norm_head(z))`.

    Subclasses define `log_decay(hidden_states)` (g ≤ 0, as in `chunked_linear_attention`) and may override
    `rotate(query, key, cache)` (position encoding of q and k).

    Args:
        config: an `ICLConfig` (uses hidden_size, num_attention_heads, use_bias, layer_norm_epsilon,
            scan_chunk_size).
        layer_idx (`int`): index of the layer, used to find this layer's state in the cache.
        key_width (`int`): total width H·Dk of q and k.
        value_width (`int`): total width H·Dv of v and of the gate r.
        gate_bias (`bool`): whether W_r has a bias.
    """

    recurrent = True  # decoding updates the fixed-size S
    returns_attention_maps = False  # decayed, unnormalised scores: the exact map comes from `mixing_map`
    mixing_maps = True
    map_axis = "heads"

    def __init__(self, config, layer_idx: int, key_width: int, value_width: int, gate_bias: bool):
        super().__init__()
        self.config = config
        self.layer_idx = layer_idx
        self.num_heads = config.num_attention_heads
        self.key_dim = key_width // self.num_heads
        self.value_dim = value_width // self.num_heads
        width, bias = config.hidden_size, config.use_bias
        self.q_proj = nn.Linear(width, key_width, bias=bias)
        self.k_proj = nn.Linear(width, key_width, bias=bias)
        self.v_proj = nn.Linear(width, value_width, bias=bias)
        self.g_proj = nn.Linear(width, value_width, bias=gate_bias)
        self.out_proj = residual_projection(nn.Linear(value_width, width, bias=bias))

    def state_size(self) -> int:
        return self.num_heads * self.key_dim * self.value_dim * 4  # S in float32

    def log_decay(self, hidden_states):
        raise NotImplementedError

    def rotate(self, query, key, cache):
        return query, key

    def project(self, hidden_states):
        """q (scaled by 1/√Dk), k and v in one matmul: the three weights are stacked on the fly (parameters and
        checkpoints keep W_q, W_k, W_v apart), so the input is read once and its gradient is one matmul.

        Returns:
            query, key (B, H, T, Dk) and value (B, H, T, Dv), views of one (B, T, ·) output.
        """
        scale = self.key_dim**-0.5  # folded into W_q: the recurrence is linear in q, and RoPE commutes with it
        layers = (self.q_proj, self.k_proj, self.v_proj)
        weight = torch.cat([self.q_proj.weight * scale, self.k_proj.weight, self.v_proj.weight])  # (2·H·Dk + H·Dv, d)
        bias = None
        if self.q_proj.bias is not None:
            bias = torch.cat([self.q_proj.bias * scale, self.k_proj.bias, self.v_proj.bias])
        fused = F.linear(hidden_states, weight, bias)  # (B, T, 2·H·Dk + H·Dv)
        heads = (*hidden_states.shape[:2], self.num_heads, -1)
        parts = fused.split([layer.out_features for layer in layers], dim=-1)
        return (part.view(heads).transpose(1, 2) for part in parts)  # (B, H, T, Dk), (B, H, T, Dk), (B, H, T, Dv)

    def mixing_map(self, hidden_states, mask=None) -> MixingMap:
        """M_tj = Σ_d q_td k_jd exp(b_td − b_jd) on z = M v, the recurrence's output before the norm and gate."""
        query, key, value = self.project(hidden_states)
        query, key = self.rotate(query, key, None)
        log_decay = self.log_decay(hidden_states)
        out = linear_recurrence(query, key, value, log_decay, mask, None, self.config.scan_chunk_size)
        return MixingMap(linear_recurrence_map(query, key, log_decay, mask), value, out)

    def forward(
        self, hidden_states, attention_mask=None, cache=None, input_ids=None, position_ids=None, recorder=None, **kw
    ):
        batch, length, _ = hidden_states.shape
        report_mixing_map(self, hidden_states, attention_mask, cache, recorder)
        query, key, value = self.project(hidden_states)
        query, key = self.rotate(query, key, cache)
        out = linear_recurrence(
            query,
            key,
            value,
            self.log_decay(hidden_states),
            mask=token_mask(attention_mask, length),
            state=cache.layer_state(self.layer_idx) if cache is not None else None,
            chunk_size=self.config.scan_chunk_size,
        )  # (B, H, T, Dv)
        out = F.layer_norm(out, (self.value_dim,), eps=self.config.layer_norm_epsilon)  # per head, no affine
        gate = F.silu(self.g_proj(hidden_states)).view(batch, length, self.num_heads, -1)  # (B, T, H, Dv)
        return self.out_proj((gate * out.transpose(1, 2)).reshape(batch, length, -1))  # (B, T, d)
