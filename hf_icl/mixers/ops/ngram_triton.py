"""Segmented prefix sums for the n-gram heads (paper 1, §6 and Appendix F), with a Triton kernel for CUDA.

`ngram.py` sorts the registrations of an n-gram head by (n-gram, position), so every n-gram's hidden states form
one contiguous segment; the causal average at a query is then a prefix sum inside its segment:

    out_k = Σ_{m ∈ segment(k), m ≤ k} x_m.

The Triton kernel runs one program per (segment, block of columns) and accumulates in fp32, so no float64 prefix
over the whole batch is needed. Its backward is the same scan run backwards (flip, scan, flip). Triton is
optional: without it (or on CPU) `ngram.py` uses its float64 `cumsum` path, which is the kernel's test oracle
(the kernel also runs on CPU tensors under `TRITON_INTERPRET=1`).
"""

from __future__ import annotations

import torch

try:  # guarded: the package must import (and export as remote code) without Triton
    import triton
    import triton.language as tl
except Exception:  # pragma: no cover - depends on the environment
    triton = None

HAS_TRITON = triton is not None

if HAS_TRITON:

    @triton.jit
    def _segmented_cumsum_kernel(x_ptr, out_ptr, starts_ptr, width, BLOCK_D: tl.constexpr):
        segment = tl.program_id(0)
        cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
        inside = cols < width
        start = tl.load(starts_ptr + segment)
        end = tl.load(starts_ptr + segment + 1)
        acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
        for row in range(start, end):
            acc += tl.load(x_ptr + row * width + cols, mask=inside, other=0.0).to(tl.float32)
            tl.store(out_ptr + row * width + cols, acc.to(out_ptr.dtype.element_ty), mask=inside)


def _launch(x: torch.Tensor, starts: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    out = torch.empty_like(x)
    width = x.shape[1]
    block = min(128, triton.next_power_of_2(max(width, 1)))
    grid = (starts.numel() - 1, triton.cdiv(width, block))
    if grid[0] > 0 and x.numel() > 0:
        _segmented_cumsum_kernel[grid](x, out, starts.contiguous(), width, BLOCK_D=block)
    return out


class _SegmentedCumsum(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, starts):
        ctx.save_for_backward(starts)
        return _launch(x, starts)

    @staticmethod
    def backward(ctx, grad):
        (starts,) = ctx.saved_tensors
        # d out_m / d x_k = 1 for k ≤ m in the same segment: a suffix sum, i.e. the scan on the reversed rows.
        reversed_starts = (starts[-1] - starts).flip(0)
        return _launch(grad.flip(0), reversed_starts).flip(0), None


def segmented_cumsum_triton(x: torch.Tensor, starts: torch.Tensor) -> torch.Tensor:
    """Inclusive prefix sums of the rows of `x` restarted at every segment (differentiable).

    Args:
        x: (N, d) rows, grouped into contiguous segments.
        starts: (S + 1,) int64 offsets: segment s is rows `starts[s] : starts[s + 1]`; `starts[-1] == N`.

    Returns:
        (N, d) tensor with `out[k] = Σ x[m]` over the rows m ≤ k of k's segment.
    """
    if not HAS_TRITON:
        raise RuntimeError("segmented_cumsum_triton needs the triton package (pip install triton)")
    return _SegmentedCumsum.apply(x, starts)
