"""Mamba's exact token-mixing map (`output_attentions=True`): the chunked form against the direct sum.

Run: `OMP_NUM_THREADS=1 python benchmarks/mamba_mixing_map.py [--repeats 3]`.

The map of S6 is M^d_tj = Σ_n C_t[n] B_j[n] exp(A[d, n] (Δcum_t[d] − Δcum_j[d])) Δ_j[d], one (T, T) matrix per inner
channel d. The previous algorithm, kept here as the reference, summed those B · D · T² · N decayed terms directly
(eight channels at a time). The shipped `SelectiveSSM.selective_map` sums directly only inside 16-row blocks; for
keys before a block it splits the decay at the block's start into two factors ≤ 1, so those entries are one batched
matmul over n. The n-gram-head analysis of P1 §5.1 draws Mamba's maps for every layer and test row, which is what
made that analysis take about 35 CPU minutes with the direct sum.

Each case is one `selective_map` call on the S6 input of a RegBench-sized Mamba layer (tiny preset: d_inner 128,
N = 16) for a batch of 2 rows (the analysis batch). Both forms are checked to agree before timing, and run
interleaved in one process (process CPU time, median of repeats, best of rounds). ratio = direct / chunked.
"""

from __future__ import annotations

import argparse

import torch
from common import add_output_argument, median_time, print_table, run_recorded
from torch.nn import functional as F

import hf_icl
from hf_icl.mixers.mamba import MambaMixer
from hf_icl.mixers.ops.mixing_maps import causal_key_mask

LENGTHS = (128, 256, 512)


def direct_map(ssm, x, block: int = 8) -> torch.Tensor:
    """The previous algorithm: every decayed term from float64 prefix-sum differences, `block` channels at a time."""
    delta, B, C = ssm.x_proj(x).split([ssm.dt_rank, ssm.state_size, ssm.state_size], dim=-1)
    delta = F.softplus(ssm.dt_proj(delta)).float()  # (B, T, D)
    A = -torch.exp(ssm.A_log.float())  # (D, N)
    cum = delta.double().cumsum(1).transpose(1, 2)  # (B, D, T)
    allowed = causal_key_mask(None, x.shape[1], x.device)[..., None]  # (1, 1, T, T, 1)
    products = (C.float()[:, :, None, :] * B.float()[:, None, :, :])[:, None]  # (B, 1, T, T, N)
    rows = []
    for s in range(0, A.shape[0], block):
        gap = (cum[:, s : s + block, :, None] - cum[:, s : s + block, None, :]).float()  # (B, b, T, T)
        decay = (gap[..., None] * A[s : s + block, None, None, :]).masked_fill(allowed == 0, float("-inf")).exp()
        rows.append((decay * products).sum(-1) * delta.transpose(1, 2)[:, s : s + block, None, :])
    maps = torch.cat(rows, dim=1)  # (B, D, T, T)
    return maps + torch.diag_embed(ssm.D[None, :, None].expand(-1, -1, x.shape[1]))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    add_output_argument(parser)
    args = parser.parse_args()
    config = hf_icl.config_for("mamba", "tiny")
    torch.manual_seed(0)
    mixer = MambaMixer(config, layer_idx=0).eval()
    for module in mixer.modules():  # the reference initialisation (A_log, D, Δ's bias)
        if hasattr(module, "reset_mixer_parameters"):
            module.reset_mixer_parameters()
    rows = []
    for length in LENGTHS:
        hidden = torch.randn(2, length, config.hidden_size)
        with torch.no_grad():
            x = F.silu(mixer.conv(F.linear(hidden, mixer.in_proj.weight.chunk(2)[0]), None))  # (B, T, d_inner)
            torch.testing.assert_close(mixer.ssm.selective_map(x), direct_map(mixer.ssm, x), atol=1e-5, rtol=1e-4)
        times = []
        for _ in range(args.rounds):
            timing = dict(repeats=args.repeats, warmup=1, clock="process")
            with torch.no_grad():
                old = median_time(lambda x=x: direct_map(mixer.ssm, x), **timing)
                new = median_time(lambda x=x: mixer.ssm.selective_map(x), **timing)
            times.append((old, new))
        rows.append((f"tiny, B=2, T={length}", *(min(column) for column in zip(*times))))
    print(f"Mamba S6 exact map, one layer, threads={torch.get_num_threads()}, process time\n")
    print_table(rows, unit="s", ours="before: direct sum", reference="chunked (shipped)")


if __name__ == "__main__":
    run_recorded(main)
