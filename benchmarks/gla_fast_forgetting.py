"""GLA with the fast-forgetting gates of a trained model: sub-chunk tiling against whole-chunk explicit products.

Run: `OMP_NUM_THREADS=1 python benchmarks/gla_fast_forgetting.py [--repeats 5]`.

A GLA trained on RegBench learns gates that forget fast: in the zoo's 3,000-step run most 64-step chunks decay by
more than e^−30 in some key dimension, so the single factored matmul of `chunk_decays.key_dim_scores` would overflow
there. Before sub-chunk tiling those chunks formed explicit float64 (C, C, Dk) products, and the training step slowed
about 5× as the model learned (0.6 → 3–4 s per step at one thread). The shipped path (`chunk_decays.tiled_scores`)
factors every block between 16-step sub-chunks around the sub-chunk boundaries, tiles sub-chunks that themselves
decay beyond the bound again into 4-step ones, and forms explicit (4, 4, Dk) products only below that.

Each case times one training forward + backward of a single GLA mixer layer at the size named, with the bias of its
gate (b_α, eq. 44) shifted to set how fast it forgets: 0 is the fresh initialisation (every chunk safe), −8 gives
≈ 0.5 nats per step (64-step chunks unsafe, 16-step sub-chunks safe, like the trained model), −40 gives ≈ 2.5 nats
per step (16-step sub-chunks unsafe too, 4-step ones safe). "before" is the same layer and weights with the unsafe
chunks formed as whole-chunk explicit products, the previous algorithm, kept here as the reference. Both are checked
to agree before timing and run interleaved in one process (process CPU time, median of repeats, best of rounds).
ratio = before / tiled.
"""

from __future__ import annotations

import argparse
import contextlib

import torch
from common import add_output_argument, median_time, print_table, run_recorded
from linear_attention_chunked import forward_backward

import hf_icl
from hf_icl.mixers.gla import GatedLinearAttention
from hf_icl.mixers.ops import chunk_decays

TILED = chunk_decays.tiled_scores
CASES = (("tiny", 32, 256), ("small", 4, 2048))  # (preset, batch, length): the zoo recipe's size, and a long one
GATE_SHIFTS = (0.0, -8.0, -40.0)


def whole_chunk_scores(query, key, b, size=None):
    """The previous algorithm: explicit (C, C, Dk) products over the whole chunk, from float64 differences."""
    return chunk_decays.explicit_scores(query, key, b)  # (M, C, C)


@contextlib.contextmanager
def scores_by(form):
    chunk_decays.tiled_scores = form
    try:
        yield
    finally:
        chunk_decays.tiled_scores = TILED


def unsafe_share(mixer, x):
    """Shares of 64-step chunks and of 16-step sub-chunks that decay beyond e^−SAFE_EXPONENT in some key dim."""
    with torch.no_grad():
        g = mixer.log_decay(x).double()  # (B, H, T, Dk)
    shares = []
    for size in (mixer.config.scan_chunk_size, chunk_decays.SUBCHUNK_SIZE):
        whole = g[:, :, : g.shape[2] // size * size].unflatten(2, (-1, size)).sum(3)  # (B, H, N, Dk)
        shares.append((whole < -chunk_decays.SAFE_EXPONENT).any(-1).double().mean().item())
    return shares


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    add_output_argument(parser)
    args = parser.parse_args()
    rows, shares = [], []
    for preset, batch, length in CASES:
        config = hf_icl.config_for("gla", preset)
        for shift in GATE_SHIFTS:
            torch.manual_seed(0)
            mixer = GatedLinearAttention(config, layer_idx=0)
            with torch.no_grad():
                mixer.gk_proj[1].bias += shift
            x = torch.randn(batch, length, config.hidden_size, requires_grad=True)
            with torch.no_grad(), scores_by(whole_chunk_scores):
                before = mixer(x)
            with torch.no_grad():
                torch.testing.assert_close(mixer(x), before, atol=1e-4, rtol=1e-4)
            step = forward_backward(mixer, x)
            times = []
            for _ in range(args.rounds):
                with scores_by(whole_chunk_scores):
                    old = median_time(step, repeats=args.repeats, warmup=1, clock="process")
                new = median_time(step, repeats=args.repeats, warmup=1, clock="process")
                times.append((old, new))
            case = f"{preset} B={batch} T={length}, gate bias {shift:+g}"
            rows.append((case, *(min(column) for column in zip(*times))))
            shares.append((case, *unsafe_share(mixer, x)))
    print(f"GLA mixer layer, training forward + backward, threads={torch.get_num_threads()}, process time\n")
    print_table(rows, unit="s", ours="before: whole-chunk explicit", reference="tiled (shipped)")
    print("\nShare of chunks beyond the bound (exp(b_C) < e^-30 in some key dim):\n")
    print("| case | 64-step chunks | 16-step sub-chunks |\n|---|---|---|")
    for case, chunk_share, sub_share in shares:
        print(f"| {case} | {chunk_share:.2f} | {sub_share:.2f} |")


if __name__ == "__main__":
    run_recorded(main)
