"""Compiled CPU short causal depthwise convolution, forward and backward (numba; optional, dispatched by
:func:`.short_conv.depthwise_conv`).

The maths of `short_conv.ShiftedDepthwiseConv` (its oracle), with x preceded by `left_zeros` implicit zeros:

    y_t = b + Σ_j w_j ⊙ x_{t − z + j},   ∂x_s = Σ_j w_j ⊙ ∂y_{s + z − j},   ∂w_j = Σ_{b,t} ∂y_t ⊙ x_{t − z + j},
    ∂b = Σ_{b,t} ∂y_t      (z = left_zeros; taps reading before the sequence read zeros).

The torch form makes k shifted `addcmul` passes forward and about 3k + 1 passes backward over the (B, T, C)
activations; here each direction is one pass over time per batch row, channels innermost (vectorised by LLVM), the
k taps of a row served from cache. ∂w and ∂b are summed in float64 (a sum over B·T terms, which torch does
pairwise). Scope: float32, contiguous (B, S, C) input; single-threaded, as the package's other numba kernels.
"""

from __future__ import annotations

import torch
from numba import njit
from torch.autograd.function import once_differentiable

from .precision import autocast_off

OPTIONS = dict(cache=True, fastmath={"contract"}, error_model="numpy", nogil=True)


@njit(**OPTIONS)
def conv_forward(x, taps, bias, left_zeros, out):
    """out (B, L, C) = bias + Σ_j taps[j] ⊙ x shifted; x (B, S, C), taps (k, C), bias (C,)."""
    batch, length, channels = out.shape
    for b in range(batch):
        for t in range(length):
            row = out[b, t]
            row[:] = bias
            for j in range(taps.shape[0]):
                s = t + j - left_zeros
                if 0 <= s < x.shape[1]:
                    source, tap = x[b, s], taps[j]
                    for c in range(channels):
                        row[c] += tap[c] * source[c]


@njit(**OPTIONS)
def conv_backward(x, taps, left_zeros, grad_out, grad_x, grad_taps, grad_bias):
    """grad_x (B, S, C) (zeroed here), grad_taps (k, C) and grad_bias (C,) (float64, accumulated) from grad_out."""
    batch, length, channels = grad_out.shape
    grad_x[:] = 0
    for b in range(batch):
        for t in range(length):
            dy = grad_out[b, t]
            for c in range(channels):
                grad_bias[c] += dy[c]
            for j in range(taps.shape[0]):
                s = t + j - left_zeros
                if 0 <= s < x.shape[1]:
                    source, tap, into, grad_tap = x[b, s], taps[j], grad_x[b, s], grad_taps[j]
                    for c in range(channels):
                        into[c] += tap[c] * dy[c]
                        grad_tap[c] += dy[c] * source[c]


class NumbaShortConv(torch.autograd.Function):
    """Autograd function of the compiled convolution, `ShiftedDepthwiseConv`'s contract: forward(x (B, S, C),
    weight (C, k), bias (C,) or None, left_zeros) → (B, S + left_zeros − k + 1, C). float32; first derivatives."""

    @staticmethod
    @autocast_off
    def forward(ctx, x, weight, bias, left_zeros):
        x = x.contiguous()
        kernel = weight.shape[1]
        out = x.new_empty(x.shape[0], x.shape[1] + left_zeros - kernel + 1, x.shape[2])
        taps = weight.detach().t().contiguous()  # (k, C)
        shift = bias.detach() if bias is not None else x.new_zeros(x.shape[2])
        conv_forward(x.detach().numpy(), taps.numpy(), shift.contiguous().numpy(), left_zeros, out.numpy())
        ctx.save_for_backward(x, taps)
        ctx.left_zeros, ctx.has_bias = left_zeros, bias is not None
        return out

    @staticmethod
    @once_differentiable
    @autocast_off
    def backward(ctx, grad_out):
        x, taps = ctx.saved_tensors
        grad_x = torch.empty_like(x)
        grad_taps = torch.zeros(taps.shape, dtype=torch.float64)
        grad_bias = torch.zeros(taps.shape[1], dtype=torch.float64)
        arrays = (x.numpy(), taps.numpy(), ctx.left_zeros, grad_out.contiguous().numpy())
        conv_backward(*arrays, grad_x.numpy(), grad_taps.numpy(), grad_bias.numpy())
        grad_weight = grad_taps.t().to(x.dtype)  # (C, k)
        return grad_x, grad_weight, grad_bias.to(x.dtype) if ctx.has_bias else None, None
