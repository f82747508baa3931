"""Compiled CPU segmented sums for the n-gram heads' parallel form (numba; optional, dispatched by `mixers.ngram`).

`causal_group_sums` sorts the registrations by (n-gram, position), so each n-gram is a segment of the sorted rows,
and position i's sum Σ_{j<i, same n-gram} h_j is the segment's inclusive prefix at the last registration before i
(sorted index hi_i − 1; nothing where the segment holds none before i). The plain PyTorch path gathers the rows
in sorted order, takes a float64 `cumsum` over all B·T of them and subtracts two gathered prefixes; its backward
is a reversed cumsum and two scatters. Here each direction is one pass over the sorted rows:

- forward: a running sum that restarts at every segment start, written per sorted row, then read at hi_i − 1;
- backward: the output gradients added at hi_i − 1, then a reversed running sum that restarts at every segment end,
  written back to each registration's original row.

The running sums restart per segment, so they accumulate in the values' dtype with no cancellation (the global
prefix-sum difference of the PyTorch path needs float64 for that). `tests/test_ngram_heads.py` checks both
directions against the PyTorch path.

Scope: float32 and float64 on the CPU, first derivatives; single-threaded, as the package's other numba kernels.
"""

from __future__ import annotations

import torch
from numba import njit
from torch.autograd.function import once_differentiable

from .precision import autocast_off

OPTIONS = dict(cache=True, fastmath={"contract"}, error_model="numpy", nogil=True)


@njit(**OPTIONS)
def _starts_segment(registered, length, k):
    return k == 0 or registered[k] // length != registered[k - 1] // length


@njit(**OPTIONS)
def segment_sums_forward(values, order, registered, length, hi, out):
    """out[i] = Σ of values[order[k]] over the sorted rows k of i's segment up to hi[i] − 1 (0 where hi[i] is 0).

    values (N, d) rows in original order; order (N,) original row of each sorted row; registered (N,) sorted keys
    (segment = key // length); hi (N,) per query, 0 = no match; out (N, d) per query.
    """
    count, width = values.shape
    prefix = values.copy()  # (N, d) becomes the segment-local inclusive prefix in sorted order
    for k in range(count):
        source = values[order[k]]
        if _starts_segment(registered, length, k):
            for c in range(width):
                prefix[k, c] = source[c]
        else:
            for c in range(width):
                prefix[k, c] = prefix[k - 1, c] + source[c]
    for i in range(count):
        if hi[i] > 0:
            for c in range(width):
                out[i, c] = prefix[hi[i] - 1, c]
        else:
            for c in range(width):
                out[i, c] = 0.0


@njit(**OPTIONS)
def segment_sums_backward(grad_out, order, registered, length, hi, grad_values):
    """The transpose of `segment_sums_forward`: grad_values[order[k]] = Σ grad_out[i] over the queries i of k's
    segment with hi[i] − 1 ≥ k."""
    count, width = grad_out.shape
    landed = grad_out.copy()  # (N, d) gradient arriving at each sorted row
    landed[:] = 0.0
    for i in range(count):
        if hi[i] > 0:
            for c in range(width):
                landed[hi[i] - 1, c] += grad_out[i, c]
    for k in range(count - 1, -1, -1):
        target = grad_values[order[k]]
        if k == count - 1 or _starts_segment(registered, length, k + 1):
            for c in range(width):
                target[c] = landed[k, c]
        else:
            for c in range(width):
                landed[k, c] += landed[k + 1, c]
                target[c] = landed[k, c]


class NumbaSegmentSums(torch.autograd.Function):
    """Autograd function: (values (N, d), order, registered, length, hi) → per-query sums (N, d).

    `hi` holds 0 for queries without a match (the caller's `found` mask folded in); integer inputs get no gradient.
    """

    @staticmethod
    @autocast_off
    def forward(ctx, values, order, registered, length, hi):
        values = values.contiguous()
        out = torch.empty_like(values)
        arrays = (order.numpy(), registered.numpy(), length, hi.numpy())
        segment_sums_forward(values.detach().numpy(), *arrays, out.numpy())
        ctx.save_for_backward(order, registered, hi)
        ctx.length = length
        return out

    @staticmethod
    @once_differentiable
    @autocast_off
    def backward(ctx, grad_out):
        order, registered, hi = ctx.saved_tensors
        grad_out = grad_out.contiguous()
        grad_values = torch.empty_like(grad_out)
        segment_sums_backward(
            grad_out.numpy(), order.numpy(), registered.numpy(), ctx.length, hi.numpy(), grad_values.numpy()
        )
        return grad_values, None, None, None, None
