"""Compiled CPU RMSNorm, forward and backward (numba; optional, dispatched by `modeling.layers.RMSNorm`).

y = w ⊙ x · r with r = (mean(x²) + ε)^(−1/2) over the last dimension. With g the output gradient, per row:

    ∂L/∂x = r · (g ⊙ w − x · r² · mean(g ⊙ w ⊙ x)),    ∂L/∂w = Σ_rows g ⊙ x · r.

ATen's CPU `rms_norm` is a composition (pow, mean, rsqrt, two products) whose backward is about ten elementwise
kernels over (N, d); here each direction is one pass over the rows, keeping r (N,) from the forward. It agrees with
`torch.nn.functional.rms_norm` to float32 rounding (`tests/test_rms_norm_numba.py`).

Scope: float32 on the CPU, with a weight, first derivatives; single-threaded, as the package's other numba kernels.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit
from torch.autograd.function import once_differentiable

from .precision import autocast_off

OPTIONS = dict(cache=True, fastmath={"contract", "reassoc"}, error_model="numpy", nogil=True)  # reassoc: SIMD sums


@njit(**OPTIONS)
def rms_norm_forward(x, weight, eps, out, inverse_rms):
    """out = weight ⊙ x · r per row of x (N, d); inverse_rms (N,) receives r."""
    rows, width = x.shape
    for n in range(rows):
        total = np.float32(0.0)
        for c in range(width):
            total += x[n, c] * x[n, c]
        r = np.float32(1.0) / np.sqrt(total / np.float32(width) + eps)
        inverse_rms[n] = r
        for c in range(width):
            out[n, c] = weight[c] * (x[n, c] * r)


@njit(**OPTIONS)
def rms_norm_backward(x, weight, inverse_rms, grad_out, grad_x, grad_weight):
    """grad_x (N, d) and grad_weight (d,) (overwritten) of `rms_norm_forward` for the output gradient grad_out."""
    rows, width = x.shape
    weight_sums = np.zeros(width, dtype=np.float64)  # N rows summed: float64, as ATen's reduction is accurate
    for n in range(rows):
        r = inverse_rms[n]
        dot = np.float32(0.0)
        for c in range(width):
            dot += grad_out[n, c] * weight[c] * x[n, c]
            weight_sums[c] += grad_out[n, c] * x[n, c] * r
        scale = r * r * dot / np.float32(width)
        for c in range(width):
            grad_x[n, c] = r * (grad_out[n, c] * weight[c] - x[n, c] * scale)
    for c in range(width):
        grad_weight[c] = weight_sums[c]


class NumbaRMSNorm(torch.autograd.Function):
    """Autograd function: (x (..., d) float32, weight (d,), eps) → RMSNorm(x) ⊙ weight, same shape."""

    @staticmethod
    @autocast_off
    def forward(ctx, x, weight, eps):
        shape = x.shape
        flat = x.detach().reshape(-1, shape[-1]).contiguous()
        out = torch.empty_like(flat)
        inverse_rms = torch.empty(flat.shape[0], dtype=flat.dtype)
        rms_norm_forward(flat.numpy(), weight.detach().contiguous().numpy(), np.float32(eps), out.numpy(),
                         inverse_rms.numpy())  # fmt: skip
        ctx.save_for_backward(flat, weight, inverse_rms)
        return out.view(shape)

    @staticmethod
    @once_differentiable
    @autocast_off
    def backward(ctx, grad_out):
        flat, weight, inverse_rms = ctx.saved_tensors
        grad = grad_out.reshape(flat.shape).contiguous()
        grad_x, grad_weight = torch.empty_like(flat), torch.empty_like(weight)
        rms_norm_backward(flat.numpy(), weight.detach().contiguous().numpy(), inverse_rms.numpy(), grad.numpy(),
                          grad_x.numpy(), grad_weight.numpy())  # fmt: skip
        return grad_x.view(grad_out.shape), grad_weight, None
