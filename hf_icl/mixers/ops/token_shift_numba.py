"""Compiled CPU token-shift mixes, forward and backward (numba; optional; dispatched by `token_shift`).

For M mixing vectors μ_m (RWKV-7's μ_r, μ_w, μ_k, μ_v, μ_a, μ_g), with x_{−1} the carried last input:

    out[m, b, t] = x_t + (x_{t−1} − x_t) ⊙ μ_m                                  (B, T, d) per m

and, with G the gradient of out,

    ∂x_t = Σ_m G[m, t] ⊙ (1 − μ_m) + Σ_m G[m, t + 1] ⊙ μ_m,   ∂x_{−1} = Σ_m G[m, 0] ⊙ μ_m,
    ∂μ_m = Σ_{b, t} G[m, t] ⊙ (x_{t−1} − x_t).

ATen runs it as a concatenation (the shift), a subtraction and a broadcast `addcmul` over (M, B, T, d), whose backward
is about eight kernels over (M, B, T, d); here each direction is one pass over the tokens (1.6x faster forward +
backward at RWKV-7's tiny shape, B = 32, T = 384, d = 64, M = 6: `benchmarks/zoo_output_ops.py`). ∂μ is summed per
batch row in float32 and across rows in float64; each sum of the backward is a loop of its own over a batch row's T·d
values.

Scope: float32 on the CPU, first derivatives; single-threaded, as the package's other numba kernels.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit
from torch.autograd.function import once_differentiable

from .precision import autocast_off

OPTIONS = dict(cache=True, fastmath={"contract", "reassoc"}, error_model="numpy", nogil=True)  # reassoc: SIMD sums


@njit(**OPTIONS)
def token_shift_forward(x, last, mix, outs):
    """outs (a tuple of M arrays (B, T, d)) from x (B, T, d), last (B, d) (x_{−1}) and mix (M, d)."""
    batch, length, width = x.shape
    for b in range(batch):
        for t in range(length):
            previous = last[b] if t == 0 else x[b, t - 1]
            for m in range(mix.shape[0]):
                out = outs[m]
                for c in range(width):
                    out[b, t, c] = x[b, t, c] + (previous[c] - x[b, t, c]) * mix[m, c]


@njit(**OPTIONS)
def _accumulate(target, gradient, scale, width):
    """target[t·d + c] += gradient[t·d + c] · scale[c] over a flat (T·d) row, scale (d,) per channel."""
    for t in range(target.shape[0] // width):
        base = t * width
        for c in range(width):
            target[base + c] += gradient[base + c] * scale[c]


@njit(**OPTIONS)
def token_shift_backward(x, last, mix, grads, grad_x, grad_last, grad_mix):
    """grad_x (B, T, d), grad_last (B, d) and grad_mix (M, d) (float64; all overwritten) given the gradients of the
    outputs, a tuple of M arrays (B, T, d).

    Per batch row, over its tokens flattened to T·d: each sum is its own loop (one output each, so that LLVM
    vectorises it; one loop updating three outputs stayed scalar and cost four times as much)."""
    batch, length, width = x.shape
    mixes, size = mix.shape[0], length * width
    keep = 1 - mix  # (M, d): 1 − μ_m
    change = np.empty(size, x.dtype)  # x_{t−1} − x_t
    own = np.empty(size, x.dtype)  # Σ_m G[m, t] ⊙ (1 − μ_m)
    later = np.empty(size, x.dtype)  # Σ_m G[m, t] ⊙ μ_m: the part of ∂x_{t−1} from step t
    row_mix = np.empty(width, x.dtype)  # one batch row's ∂μ_m
    flat_x, flat_grad_x = x.reshape(batch, size), grad_x.reshape(batch, size)
    grad_mix[:] = 0
    for b in range(batch):
        tokens = flat_x[b]
        for c in range(width):
            change[c] = last[b, c] - tokens[c]
        for i in range(width, size):
            change[i] = tokens[i - width] - tokens[i]
        own[:] = 0
        later[:] = 0
        for m in range(mixes):
            gradient = grads[m][b].reshape(size)
            _accumulate(own, gradient, keep[m], width)
            _accumulate(later, gradient, mix[m], width)
            row_mix[:] = 0
            for t in range(length):
                base = t * width
                for c in range(width):
                    row_mix[c] += gradient[base + c] * change[base + c]
            for c in range(width):
                grad_mix[m, c] += row_mix[c]
        for i in range(size - width):
            flat_grad_x[b, i] = own[i] + later[i + width]
        for i in range(size - width, size):
            flat_grad_x[b, i] = own[i]
        for c in range(width):
            grad_last[b, c] = later[c]


class NumbaTokenShift(torch.autograd.Function):
    """Autograd function: (x (B, T, d), last (B, d), mix (M, d)) float32 → the M token-shift mixes, M tensors (B, T, d).

    Separate outputs, not one (M, B, T, d) tensor: unbinding that would stack the M gradients into one in the backward.
    """

    @staticmethod
    @autocast_off
    def forward(ctx, x, last, mix):
        x, last, mix = (t.detach().contiguous() for t in (x, last, mix))
        outs = tuple(torch.empty_like(x) for _ in range(mix.shape[0]))
        token_shift_forward(x.numpy(), last.numpy(), mix.numpy(), tuple(out.numpy() for out in outs))
        ctx.save_for_backward(x, last, mix)
        return outs

    @staticmethod
    @once_differentiable
    @autocast_off
    def backward(ctx, *grads):
        x, last, mix = ctx.saved_tensors
        grad_x, grad_last = torch.empty_like(x), torch.empty_like(last)
        grad_mix = torch.empty(mix.shape, dtype=torch.float64)
        grads = tuple(g.contiguous().numpy() for g in grads)
        token_shift_backward(x.numpy(), last.numpy(), mix.numpy(), grads, grad_x.numpy(), grad_last.numpy(),
                             grad_mix.numpy())  # fmt: skip
        return grad_x, grad_last, grad_mix.to(mix.dtype)
