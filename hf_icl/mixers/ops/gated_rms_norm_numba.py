"""Compiled CPU gated RMSNorm, forward and backward (numba; optional, dispatched by `gated_rms_norm.gated_rms_norm`).

Per row of width d, with s(z) = z σ(z) (SiLU) and r = (mean(u²) + ε)^(−1/2):

    gate first (Mamba-2):           u = x ⊙ s(z),  y = w ⊙ u · r
    norm first (Gated DeltaNet):    u = x,         y = w ⊙ u · r ⊙ s(z)

With g the output gradient and h the gradient reaching the norm (g, or g ⊙ s(z) when the norm comes first):

    ∂u = r · (h ⊙ w − u · r² · mean(h ⊙ w ⊙ u)),   ∂w = Σ_rows h ⊙ u · r,
    gate first: ∂x = ∂u ⊙ s(z),  ∂z = ∂u ⊙ x ⊙ s'(z);   norm first: ∂x = ∂u,  ∂z = g ⊙ w ⊙ u · r ⊙ s'(z),

s'(z) = σ(z) (1 + z (1 − σ(z))). ATen runs the same as a SiLU, a product and `rms_norm`'s composition (pow, mean,
rsqrt, two products), whose backward is about fifteen elementwise kernels over (N, d). Here each direction is one
pass over the rows (forward + backward 2.4x faster at Mamba-2's tiny shape, 1.5x at Gated DeltaNet's:
`benchmarks/zoo_output_ops.py`), keeping r (N,) from the forward and recomputing σ(z) in the backward
(`numba_math.scan_sigmoid`, vectorised).

Scope: float32 on the CPU, first derivatives; single-threaded, as the package's other numba kernels.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit
from torch.autograd.function import once_differentiable

from .numba_math import scan_sigmoid
from .precision import autocast_off

OPTIONS = dict(cache=True, fastmath={"contract", "reassoc"}, error_model="numpy", nogil=True)  # reassoc: SIMD sums
ONE = np.float32(1.0)


@njit(**OPTIONS)
def _silu_row(gate, n, sigmoid, silu):
    """sigmoid[c] = σ(z) and silu[c] = z σ(z) for the row n of gate (N, d)."""
    for c in range(gate.shape[1]):
        sig = scan_sigmoid(gate[n, c])
        sigmoid[c] = sig
        silu[c] = gate[n, c] * sig


@njit(**OPTIONS)
def gated_rms_norm_forward(x, gate, weight, eps, gate_first, out, inverse_rms):
    """out (N, d) and inverse_rms (N,) = r of the rows of x, gate (N, d); see the module docstring. Every inner loop
    is branch-free, so that LLVM vectorises it."""
    rows, width = x.shape
    normed = np.empty(width, x.dtype)  # u of the current row
    sigmoid, silu = np.empty(width, x.dtype), np.empty(width, x.dtype)
    for n in range(rows):
        _silu_row(gate, n, sigmoid, silu)
        if gate_first:
            for c in range(width):
                normed[c] = x[n, c] * silu[c]
        else:
            for c in range(width):
                normed[c] = x[n, c]
        total = np.float32(0.0)
        for c in range(width):
            total += normed[c] * normed[c]
        r = ONE / np.sqrt(total / np.float32(width) + eps)
        inverse_rms[n] = r
        if gate_first:
            for c in range(width):
                out[n, c] = weight[c] * (normed[c] * r)
        else:
            for c in range(width):
                out[n, c] = weight[c] * (normed[c] * r) * silu[c]


@njit(**OPTIONS)
def gated_rms_norm_backward(x, gate, weight, inverse_rms, gate_first, grad_out, grad_x, grad_gate, grad_weight):
    """grad_x, grad_gate (N, d) and grad_weight (d,) (overwritten) of `gated_rms_norm_forward` given grad_out."""
    rows, width = x.shape
    weight_sums = np.zeros(width, dtype=np.float64)  # N rows summed in float64, as ATen's reduction
    normed = np.empty(width, x.dtype)  # u
    reaching = np.empty(width, x.dtype)  # h: the gradient reaching the norm's output w ⊙ u · r
    sigmoid, silu = np.empty(width, x.dtype), np.empty(width, x.dtype)
    for n in range(rows):
        r = inverse_rms[n]
        _silu_row(gate, n, sigmoid, silu)
        if gate_first:
            for c in range(width):
                normed[c] = x[n, c] * silu[c]
                reaching[c] = grad_out[n, c]
        else:
            for c in range(width):
                normed[c] = x[n, c]
                reaching[c] = grad_out[n, c] * silu[c]
                slope = sigmoid[c] * (ONE + gate[n, c] * (ONE - sigmoid[c]))  # s'(z)
                grad_gate[n, c] = grad_out[n, c] * weight[c] * (x[n, c] * r) * slope
        dot = np.float32(0.0)
        for c in range(width):
            dot += reaching[c] * weight[c] * normed[c]
            weight_sums[c] += reaching[c] * normed[c] * r
        scale = r * r * dot / np.float32(width)
        if gate_first:
            for c in range(width):
                grad_u = r * (reaching[c] * weight[c] - normed[c] * scale)
                slope = sigmoid[c] * (ONE + gate[n, c] * (ONE - sigmoid[c]))
                grad_x[n, c] = grad_u * silu[c]
                grad_gate[n, c] = grad_u * x[n, c] * slope
        else:
            for c in range(width):
                grad_x[n, c] = r * (reaching[c] * weight[c] - normed[c] * scale)
    for c in range(width):
        grad_weight[c] = weight_sums[c]


class NumbaGatedRMSNorm(torch.autograd.Function):
    """Autograd function: (x, gate (..., d) float32, weight (d,), eps, gate_first) → the gated RMSNorm, x's shape."""

    @staticmethod
    @autocast_off
    def forward(ctx, x, gate, weight, eps, gate_first):
        shape = x.shape
        flat_x, flat_gate = (t.detach().reshape(-1, shape[-1]).contiguous() for t in (x, gate))  # (N, d)
        out = torch.empty_like(flat_x)
        inverse_rms = torch.empty(flat_x.shape[0], dtype=flat_x.dtype)
        gated_rms_norm_forward(flat_x.numpy(), flat_gate.numpy(), weight.detach().contiguous().numpy(),
                               np.float32(eps), gate_first, out.numpy(), inverse_rms.numpy())  # fmt: skip
        ctx.save_for_backward(flat_x, flat_gate, weight, inverse_rms)
        ctx.gate_first = gate_first
        return out.view(shape)

    @staticmethod
    @once_differentiable
    @autocast_off
    def backward(ctx, grad_out):
        flat_x, flat_gate, weight, inverse_rms = ctx.saved_tensors
        grad = grad_out.reshape(flat_x.shape).contiguous()
        grad_x, grad_gate, grad_weight = torch.empty_like(flat_x), torch.empty_like(flat_gate), torch.empty_like(weight)
        gated_rms_norm_backward(flat_x.numpy(), flat_gate.numpy(), weight.detach().contiguous().numpy(),
                                inverse_rms.numpy(), ctx.gate_first, grad.numpy(), grad_x.numpy(), grad_gate.numpy(),
                                grad_weight.numpy())  # fmt: skip
        shape = grad_out.shape
        return grad_x.view(shape), grad_gate.view(shape), grad_weight, None, None
