"""Compiled CPU rotary embedding (RoPE) of queries and keys, forward and backward (numba; optional, dispatched by
`mixers.positions.rope_rotate`).

With the head dimension cut into halves (x₁, x₂) and the angles θ_{t,i} = t·base^(−2i/D) of position t:

    rope(x)_t = (x₁·cos θ_t − x₂·sin θ_t,  x₂·cos θ_t + x₁·sin θ_t),

the `rotate_half` form of `transformers`' `apply_rotary_pos_emb`. The rotation is orthogonal, so its backward is
the rotation by −θ. `apply_rotary_pos_emb` spends about eight elementwise kernels a tensor each way (two products,
a negation, a concatenation, a sum, and their gradients); here queries and keys are rotated in one pass each way.
Each output element is the same two float32 products and one sum or difference as there, in the same order and
without fused multiply-adds, so the result is the same bit for bit, forward and backward
(`tests/test_rope_numba.py`).

Scope: float32 on the CPU, first derivatives; the batch is cut into one slice per PyTorch thread (`kernel_threads`).
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit
from torch.autograd.function import once_differentiable

from .kernel_threads import run_in_slices
from .precision import autocast_off

OPTIONS = dict(cache=True, error_model="numpy", nogil=True)  # no fastmath: no FMA, the same bits as ATen's products


@njit(**OPTIONS)
def rotate_rows(x, out, cos, sin, sign):
    """out[b, t, h] = x[b, t, h] rotated by sign·θ_t; x and out (B, T, H, D) (any strides), cos and sin (T, D/2)."""
    batch, length, heads, dim = x.shape
    half = dim // 2
    for b in range(batch):
        for t in range(length):
            for h in range(heads):
                for i in range(half):
                    c, s = cos[t, i], sign * sin[t, i]
                    first, second = x[b, t, h, i], x[b, t, h, i + half]
                    out[b, t, h, i] = first * c - second * s
                    out[b, t, h, i + half] = second * c + first * s


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, sign: float) -> torch.Tensor:
    """`x` (B, H, T, D) rotated by sign·θ, as a (B, H, T, D) view of a fresh (B, T, H, D) tensor (the heads' layout
    of the fused projection, which attention reads as it did the unrotated views)."""
    rows = x.detach().transpose(1, 2)  # (B, T, H, D)
    out = torch.empty(rows.shape, dtype=x.dtype)  # (B, T, H, D)
    run_in_slices(rotate_rows, [rows.numpy(), out.numpy()], (cos.numpy(), sin.numpy(), np.float32(sign)))
    return out.transpose(1, 2)  # (B, H, T, D)


class NumbaRoPE(torch.autograd.Function):
    """Autograd function: (query (B, H, T, D), key (B, H, T, D), cos (T, D/2), sin (T, D/2)) → (rotated query,
    rotated key); float32 on the CPU, D even."""

    @staticmethod
    @autocast_off
    def forward(ctx, query, key, cos, sin):
        cos, sin = cos.contiguous(), sin.contiguous()
        ctx.save_for_backward(cos, sin)
        return rotate(query, cos, sin, 1.0), rotate(key, cos, sin, 1.0)

    @staticmethod
    @once_differentiable
    @autocast_off
    def backward(ctx, grad_query, grad_key):
        cos, sin = ctx.saved_tensors
        return rotate(grad_query, cos, sin, -1.0), rotate(grad_key, cos, sin, -1.0), None, None
