"""H3 on short sequences: the quadratic form ((q k̃ᵀ) ⊙ Toeplitz) v against the FFT convolution over the H·d_h²
outer-product channels, and where the two cross (issue 30: short-sequence training speed).

Run: `OMP_NUM_THREADS=1 python benchmarks/h3_short_form.py [--lengths 82 164 256 512 1024 --tokens 5248]`.

Each case times one forward + backward of a single H3 mixer of the `tiny` preset (d = 64, 8 heads of d_h = 8) at a
fixed number of tokens per batch (B = tokens / T), so a row compares the two forms on the same work. "direct" is
`H3Mixer.mix(..., direct_max_length=T)`, "FFT" the same mixer with `direct_max_length=0`; the two are checked to
agree first. ratio = FFT time / direct time, above 1 where the direct form is faster: `DIRECT_MAX_LENGTH` in
`hf_icl/mixers/h3.py` is the longest length measured above 1.
"""

from __future__ import annotations

import argparse

import torch
from common import add_output_argument, median_time, print_table, run_recorded

import hf_icl
from hf_icl.mixers.h3 import DIRECT_MAX_LENGTH, H3Mixer


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", type=int, nargs="+", default=[82, 164, 256, 384, 512, 1024])
    parser.add_argument("--tokens", type=int, default=64 * 82, help="tokens per batch (B = tokens / T)")
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--repeats", type=int, default=5)
    add_output_argument(parser)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    mixer = H3Mixer(hf_icl.config_for("h3", args.preset), 0)
    rows = []
    for length in args.lengths:
        x = torch.randn(max(1, args.tokens // length), length, mixer.num_heads * mixer.head_dim, requires_grad=True)
        direct, fft = (mixer.mix(x, None, None, direct_max_length=limit)[-1] for limit in (length, 0))
        torch.testing.assert_close(direct, fft, rtol=1e-4, atol=1e-4)

        def step(limit, x=x):
            return lambda: mixer.mix(x, None, None, direct_max_length=limit)[-1].sum().backward()

        fft_seconds, direct_seconds = (median_time(step(limit), args.repeats) for limit in (0, length))
        rows.append((f"T={length}, B={x.shape[0]}", fft_seconds, direct_seconds))
    print_table(rows, unit="s", ours="FFT", reference="direct")
    print(f"\nshipped DIRECT_MAX_LENGTH = {DIRECT_MAX_LENGTH}")


if __name__ == "__main__":
    run_recorded(main)
