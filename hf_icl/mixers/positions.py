"""Relative position schemes applied inside attention (shared by the attention-like mixers).

- RoPE (Su et al., 2021): q, k rotated by angle p·θ_i, θ_i = base^(−2i/D); scores depend on m − n only.
- ALiBi (Press et al., 2022): additive bias −m_h·(m − n), slopes m_h = 2^(−8h/H), h = 1..H.
- Hard-ALiBi (paper 4, §2.2, Fig. 8c): head h < M sees only keys at distance 0..h; heads h ≥ M are NoPE.

All three depend on the distance m − n only, so positions are sequence indices (cache offset + arange): under
left padding the real tokens keep their mutual distances, and padding keys are masked anyway.
"""

from __future__ import annotations

import torch
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

from .ops.cpu_paths import compiled_backend

try:
    from .ops.rope_numba import NumbaRoPE
except ImportError:  # numba is missing: `apply_rotary_pos_emb`
    NumbaRoPE = None

MASKED_SCHEMES = ("alibi", "hard_alibi")  # schemes that need an explicit (per-head) attention mask


def rope_rotate(query, key, query_offset: int, base: float):
    """Rotate `query` (B, H, T, D) at positions offset..offset+T−1 and `key` (B, H, T, D) at the same positions.

    Float32 CPU tensors take the compiled kernel of `ops.rope_numba` (the same bits, forward and backward) where
    `HF_ICL_SCAN_BACKEND` allows it; everything else takes `transformers`' `apply_rotary_pos_emb`, its oracle.
    """
    head_dim, length = query.shape[-1], query.shape[2]
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=query.device, dtype=torch.float32) / head_dim))
    positions = torch.arange(query_offset, query_offset + length, device=query.device, dtype=torch.float32)
    angles = torch.outer(positions, inv_freq)  # (T, D/2)
    if (
        query.dtype == key.dtype == torch.float32
        and query.shape == key.shape
        and compiled_backend(NumbaRoPE is not None, query, key) == "numba"
    ):
        return NumbaRoPE.apply(query, key, angles.cos(), angles.sin())
    emb = torch.cat([angles, angles], dim=-1)[None]  # (1, T, D)
    return apply_rotary_pos_emb(query, key, emb.cos().to(query.dtype), emb.sin().to(query.dtype))


def alibi_slopes(num_heads: int, device=None) -> torch.Tensor:
    """The geometric ALiBi slopes m_h = 2^(−8h/H) for h = 1..H, shape (H,)."""
    return 2.0 ** (-8.0 * torch.arange(1, num_heads + 1, device=device, dtype=torch.float32) / num_heads)


def distances(query_len: int, key_len: int, device) -> torch.Tensor:
    """(T, S) matrix of m − n, where query i sits at absolute index S − T + i."""
    rows = torch.arange(key_len - query_len, key_len, device=device)[:, None]
    return rows - torch.arange(key_len, device=device)[None, :]


def relative_position_mask(scheme: str, mask: torch.Tensor, num_heads: int, num_masked_heads: int, dtype):
    """Combine a boolean (B|1, 1, T, S) causal/padding `mask` with a relative scheme, per head.

    Returns:
        For `alibi`, a float (B|1, H, T, S) additive mask (bias where allowed, dtype-min elsewhere); for
        `hard_alibi`, a boolean (B|1, H, T, S) mask; for other schemes, `mask` unchanged.
    """
    dist = distances(mask.shape[-2], mask.shape[-1], mask.device)  # (T, S)
    if scheme == "alibi":
        bias = -alibi_slopes(num_heads, mask.device)[:, None, None] * dist.clamp(min=0)  # (H, T, S)
        return torch.where(mask, bias[None].to(dtype), torch.finfo(dtype).min)
    if scheme == "hard_alibi":
        heads = torch.arange(num_heads, device=mask.device)[:, None, None]  # (H, 1, 1)
        window = (heads >= num_masked_heads) | (dist[None] <= heads)  # (H, T, S)
        return mask & window[None]
    return mask
