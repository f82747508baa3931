"""z = ((q kᵀ) ⊙ M) v over a batch, with the (T, T) maps kept in cache (H3's short-sequence form, `mixers/h3.py`).

The plain expression materialises (B, H, T, T) tensors (q kᵀ, the gated map, and in the backward three more): at
B = 64, H = 8, T = 82 each is 13.8 MB, beyond any core's L2, so one H3 layer's forward and backward spend their time
streaming maps through DRAM (memory-bound elementwise products and K = d_h = 8 batched matmuls). `GatedToeplitz`
computes the same thing a few batch rows at a time, so that one block of maps (≈ 1 MB, `BLOCK_ELEMENTS`) stays in
L2 from the matmul that writes it to the one that reads it, and saves only q, k, v and M: the backward recomputes
each block's q kᵀ. `benchmarks/cpu_kernels.py` times one H3 `tiny` mixer at that shape, forward + backward, both
ways (docs/benchmarks.md; 1.9x on the Xeon it was written on). Values and gradients are the plain expression's up
to summation order (∂M is summed block by block).

`gated_toeplitz_mix` takes this path on the CPU, and the plain expression on other devices (where memory traffic is
not the bottleneck) and under functorch transforms. First derivatives only on the blocked path (as the compiled CPU
kernels of `selective_scan`): its backward is not itself differentiable.
"""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

from .cpu_paths import plain_cpu_tensors

BLOCK_ELEMENTS = 2**18  # elements of one block of maps (fp32: 1 MB): it fits the L2 of current x86 server cores


class GatedToeplitz(torch.autograd.Function):
    """Autograd function of z = ((q kᵀ) ⊙ M) v in blocks of `rows` batch rows.

    forward(q, k, v (B, H, T, D), M (H, T, T), rows) returns z (B, H, T, D); M broadcasts over the batch.
    """

    @staticmethod
    def forward(ctx, q, k, v, maps, rows):
        z = torch.empty_like(v)
        for start in range(0, q.shape[0], rows):
            block = slice(start, start + rows)
            gated = torch.matmul(q[block], k[block].transpose(-1, -2)).mul_(maps)  # (b, H, T, T)
            torch.matmul(gated, v[block], out=z[block])
        ctx.save_for_backward(q, k, v, maps)
        ctx.rows = rows
        return z

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_z):
        q, k, v, maps = ctx.saved_tensors
        grad_z = grad_z.contiguous()
        grad_q, grad_k, grad_v = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        grad_maps = torch.zeros_like(maps)
        for start in range(0, q.shape[0], ctx.rows):
            block = slice(start, start + ctx.rows)
            scores = torch.matmul(q[block], k[block].transpose(-1, -2))  # (b, H, T, T): q kᵀ
            grad_gated = torch.matmul(grad_z[block], v[block].transpose(-1, -2))  # ∂loss/∂((q kᵀ) ⊙ M)
            torch.matmul((scores * maps).transpose(-1, -2), grad_z[block], out=grad_v[block])
            grad_maps += (grad_gated * scores).sum(0)
            grad_scores = grad_gated.mul_(maps)  # ∂loss/∂(q kᵀ)
            torch.matmul(grad_scores, k[block], out=grad_q[block])
            torch.matmul(grad_scores.transpose(-1, -2), q[block], out=grad_k[block])
        return grad_q, grad_k, grad_v, grad_maps, None


def block_rows(heads: int, length: int) -> int:
    """Batch rows per block: as many (H, T, T) maps as fit in `BLOCK_ELEMENTS`, at least one."""
    return max(1, BLOCK_ELEMENTS // (heads * length * length))


def plain_gated_toeplitz_mix(q, k, v, maps) -> torch.Tensor:
    """The plain expression ((q kᵀ) ⊙ M) v (every (B, H, T, T) tensor materialised): the path off the CPU and
    under functorch, and the oracle of the blocked form."""
    q, k, v = (t.to(maps.dtype) for t in (q, k, v))
    return ((q @ k.transpose(-1, -2)) * maps) @ v


def gated_toeplitz_mix(q, k, v, maps, rows: int | None = None) -> torch.Tensor:
    """((q kᵀ) ⊙ M) v: (B, H, T, D) from q, k, v (B, H, T, D) and a causal map M (H, T, T) shared by the batch.

    Args:
        q, k, v (`torch.Tensor`): (B, H, T, D), cast to M's dtype.
        maps (`torch.Tensor`): (H, T, T), zero above the diagonal where the mix is causal.
        rows (`int`, *optional*): batch rows per block on the blocked path; default `block_rows(H, T)`.
    """
    q, k, v = (t.to(maps.dtype) for t in (q, k, v))
    if not plain_cpu_tensors(q, k, v, maps):
        return plain_gated_toeplitz_mix(q, k, v, maps)
    rows = block_rows(q.shape[1], q.shape[2]) if rows is None else rows
    return GatedToeplitz.apply(*(t.contiguous() for t in (q, k, v, maps)), rows)
