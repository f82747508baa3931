"""The fused elementwise ops behind the zoo step cost (issue 50), each against the ATen form it replaced, side by side:

1. the gated RMSNorm (`hf_icl/mixers/ops/gated_rms_norm_numba.py`) at Mamba-2 `tiny`'s shape (gate first, N = B·T =
   12,288 rows of d_inner = 128) and Gated DeltaNet `tiny`'s (norm first, per head: 2 heads of 32), against
   `F.rms_norm(x ⊙ SiLU(z))` and `F.rms_norm(x) ⊙ SiLU(z)`;
2. RWKV-7's six token-shift mixes (`hf_icl/mixers/ops/token_shift_numba.py`, B = 32, T = 384, d = 64) against the
   concatenation and broadcast `addcmul` it replaced;
3. RWKV-7's output norm, one group per head: LayerNorm over each head plus the per-channel affine (as
   `mixers/rwkv7.py` computes it) against `F.group_norm` on the (B·T, d) rows.

Forward + backward, same process, the two sides alternating `--rounds` times (median of `--repeats` calls each);
outputs and gradients are checked to agree first. ratio = replaced time / shipped time (above 1 where the shipped form
is faster), the median of the per-round ratios.

Run: `OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python benchmarks/zoo_output_ops.py [--rounds 7 --repeats 5]`.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F
from common import add_output_argument, run_recorded
from cpu_kernels import compare

from hf_icl.mixers.ops.gated_rms_norm_numba import NumbaGatedRMSNorm
from hf_icl.mixers.ops.token_shift_numba import NumbaTokenShift

EPS = 1e-5


def leaves(*shapes):
    generator = torch.Generator().manual_seed(0)
    return [torch.randn(shape, generator=generator, requires_grad=True) for shape in shapes]


def gated_norm_case(shape, gate_first: bool):
    x, gate, weight = leaves(shape, shape, shape[-1:])
    return (x, gate, weight), lambda function: function(x, gate, weight, gate_first)


def shipped_gated_norm(x, gate, weight, gate_first):
    return NumbaGatedRMSNorm.apply(x, gate, weight, EPS, gate_first)


def aten_gated_norm(x, gate, weight, gate_first):
    width = (x.shape[-1],)
    if gate_first:
        return F.rms_norm(x * F.silu(gate), width, weight, EPS)
    return F.rms_norm(x, width, weight, EPS) * F.silu(gate)


def token_shift_case(batch=32, length=384, width=64, mixes=6):
    x, last, mix = leaves((batch, length, width), (batch, width), (mixes, width))
    return (x, last, mix), lambda function: function(x, last, mix)


def shipped_token_shift(x, last, mix):
    return torch.stack(NumbaTokenShift.apply(x, last, mix))  # (M, B, T, d)


def aten_token_shift(x, last, mix):
    previous = torch.cat([last[:, None], x[:, :-1]], dim=1)
    return torch.addcmul(x, previous - x, mix[:, None, None, :])  # (M, B, T, d)


def head_norm_case(rows=12_288, heads=2, head_dim=32):
    x, weight, bias = leaves((rows, heads * head_dim), (heads * head_dim,), (heads * head_dim,))
    return (x, weight, bias), lambda function: function(x, weight, bias, heads)


def per_head_layer_norm(x, weight, bias, heads):
    shape = (heads, x.shape[-1] // heads)
    out = F.layer_norm(x.view(x.shape[0], *shape), shape[-1:], eps=EPS)
    return torch.addcmul(bias.view(shape), out, weight.view(shape)).view(x.shape)


def group_norm(x, weight, bias, heads):
    return F.group_norm(x, heads, weight, bias, eps=EPS)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7, help="alternations of the two sides")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per side and round (median)")
    add_output_argument(parser)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    print("| case | replaced, median (ms) | shipped, median (ms) | ratio (median of per-round ratios) |")
    print("|---|---|---|---|")
    cases = [
        ("gated RMSNorm, gate first (Mamba-2), N, d = 12288, 128", gated_norm_case((12_288, 128), True),
         shipped_gated_norm, aten_gated_norm),
        ("gated RMSNorm, norm first (Gated DeltaNet), B, T, H, D = 32, 384, 2, 32",
         gated_norm_case((32, 384, 2, 32), False), shipped_gated_norm, aten_gated_norm),
        ("token shift, six mixes (RWKV-7), B, T, d = 32, 384, 64", token_shift_case(), shipped_token_shift,
         aten_token_shift),
        ("per-head norm (RWKV-7), N, H, D = 12288, 2, 32: LayerNorm + affine vs group_norm", head_norm_case(),
         per_head_layer_norm, group_norm),
    ]  # fmt: skip
    for label, case, shipped, replaced in cases:
        compare(label, case, shipped, replaced, args.rounds, args.repeats)


if __name__ == "__main__":
    run_recorded(main)
