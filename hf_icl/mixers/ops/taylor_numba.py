"""Compiled CPU Taylor feature map of Based, forward and backward (numba; optional, dispatched by `mixers.based`).

    φ(x) = [1, x / d^{1/4}, (w_ij x_i x_j)_{i ≤ j}],   w_ij = d^{−1/2} (i < j), (2d)^{−1/2} (i = j)

with the pairs in `torch.triu_indices` order (i, then j ≥ i). With g = ∂L/∂φ, per row:

    ∂L/∂x_i = g_{1+i} / d^{1/4} + Σ_{j ≥ i} w_ij g_ij x_j + Σ_{j ≤ i} w_ji g_ji x_j

(a diagonal pair counts in both sums: ∂(w x_i²)/∂x_i = 2 w x_i). The PyTorch form (`based.taylor_features`: a
one-hot selector product, two products, a concatenation) writes and reads (N, 2P) and (N, F) intermediates in both
directions, half of a Based layer's forward + backward at the zoo recipe's shape (B·H·T = 24,576 rows of d = 16,
F = 153); here each direction is one pass over the rows, vectorised along j. The forward computes the same
operations in the same order as the PyTorch form (x / d^{1/4}; x_i · x_j, then · w_ij), so its values are the same
bits; the backward sums in another order (`tests/test_mixers_delta_rule.py` compares both with float64).

Scope: float32 on the CPU, first derivatives; the rows are cut into one slice per PyTorch thread
(`kernel_threads`), with the same result bit for bit.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit
from torch.autograd.function import once_differentiable

from .kernel_threads import run_in_slices
from .precision import autocast_off

OPTIONS = dict(cache=True, fastmath={"contract"}, error_model="numpy", nogil=True)


@njit(**OPTIONS)
def taylor_forward(x, out, root, pair_weights):
    """out (N, F) = φ(x) for x (N, d); root = d^{1/4}; pair_weights (2,) holds w_ii and w_ij (i < j)."""
    rows, dim = x.shape
    diagonal, off = pair_weights[0], pair_weights[1]
    one = x.dtype.type(1)
    for n in range(rows):
        out[n, 0] = one
        for i in range(dim):
            out[n, 1 + i] = x[n, i] / root
        start = 1 + dim
        for i in range(dim):
            xi = x[n, i]
            out[n, start] = xi * xi * diagonal
            for j in range(i + 1, dim):
                out[n, start + j - i] = xi * x[n, j] * off
            start += dim - i


@njit(**OPTIONS)
def taylor_backward(x, grad_out, grad_x, root, pair_weights):
    """grad_x (N, d) of `taylor_forward` for the output gradient grad_out (N, F)."""
    rows, dim = x.shape
    diagonal, off = pair_weights[0], pair_weights[1]
    two = x.dtype.type(2)
    for n in range(rows):
        for i in range(dim):
            grad_x[n, i] = grad_out[n, 1 + i] / root
        start = 1 + dim
        for i in range(dim):
            xi = x[n, i]
            total = two * diagonal * grad_out[n, start] * xi  # ∂(w_ii x_i²)
            for j in range(i + 1, dim):
                pull = grad_out[n, start + j - i] * off
                total += pull * x[n, j]  # ∂/∂x_i of w_ij x_i x_j
                grad_x[n, j] += pull * xi  # ∂/∂x_j of the same term
            grad_x[n, i] += total
            start += dim - i


class NumbaTaylorFeatures(torch.autograd.Function):
    """Autograd function: x (..., d) float32 → φ(x) (..., 1 + d + d(d+1)/2) on the CPU; first derivatives only."""

    @staticmethod
    @autocast_off
    def forward(ctx, x):
        dim = x.shape[-1]
        flat = x.detach().reshape(-1, dim).contiguous()  # (N, d)
        features = 1 + dim + dim * (dim + 1) // 2
        out = flat.new_empty(flat.shape[0], features)
        run_in_slices(taylor_forward, [flat.numpy(), out.numpy()], extra=constants(dim))
        ctx.save_for_backward(flat)
        ctx.shape = x.shape
        return out.view(*x.shape[:-1], features)

    @staticmethod
    @once_differentiable
    @autocast_off
    def backward(ctx, grad_out):
        (flat,) = ctx.saved_tensors
        dim = flat.shape[1]
        grad = grad_out.reshape(flat.shape[0], -1).contiguous()
        grad_x = torch.empty_like(flat)
        run_in_slices(taylor_backward, [flat.numpy(), grad.numpy(), grad_x.numpy()], extra=constants(dim))
        return grad_x.view(ctx.shape)


def constants(dim: int) -> tuple:
    """The kernels' constants for width d: d^{1/4} and the pair weights."""
    return np.float32(dim**0.25), pair_weights(dim)


def pair_weights(dim: int) -> np.ndarray:
    """[w_ii, w_ij (i < j)] in float32: (2d)^{−1/2} and d^{−1/2}, rounded as `based._pair_selector`'s weights
    (2^{−1/2} and 1, each divided by √d in float32)."""
    root = np.float32(dim**0.5)
    return np.array([np.float32(2**-0.5) / root, np.float32(1.0) / root], dtype=np.float32)
