"""H3 on short sequences: the quadratic form ((q k̃ᵀ) ⊙ Toeplitz) v against the FFT convolution over the H·d_h²
outer-product channels, and where the two cross (issue 30: short-sequence training speed).

Run: `OMP_NUM_THREADS=1 python benchmarks/h3_short_form.py [--lengths 82 164 256 512 1024 2048 4096 --tokens 5248]`.

Each case times one forward + backward of a single H3 mixer of the `tiny` preset (d = 64, 8 heads of d_h = 8) at a
fixed number of tokens per batch (B = tokens / T), so a row compares the two forms on the same work. "direct" is
`H3Mixer.mix(..., direct_max_length=T)`, "FFT" the same mixer with `direct_max_length=0`; the two are checked to
agree first. ratio = FFT time / direct time, above 1 where the direct form is faster. The direct form is timed on
both of its paths, in two tables: the compiled kernel (numba, the default on CPU) and the PyTorch blocked form
(`HF_ICL_SCAN_BACKEND=torch`). `COMPILED_DIRECT_MAX_LENGTH` and `DIRECT_MAX_LENGTH` in `hf_icl/mixers/h3.py` are
the longest lengths measured above 1 on each (the PyTorch
form is timed up to twice its threshold: its (T, T) maps grow with T²).
"""

from __future__ import annotations

import argparse
import os

import torch
from common import add_output_argument, median_time, print_table, run_recorded

import hf_icl
from hf_icl.mixers.h3 import COMPILED_DIRECT_MAX_LENGTH, DIRECT_MAX_LENGTH, H3Mixer
from hf_icl.mixers.ops.selective_scan import SCAN_BACKEND_ENV


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", type=int, nargs="+", default=[82, 164, 256, 384, 512, 1024, 2048, 4096])
    parser.add_argument("--tokens", type=int, default=64 * 82, help="tokens per batch (B = tokens / T)")
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--repeats", type=int, default=5)
    add_output_argument(parser)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    mixer = H3Mixer(hf_icl.config_for("h3", args.preset), 0)
    previous = os.environ.get(SCAN_BACKEND_ENV)
    blocked_lengths = [n for n in args.lengths if n <= 2 * DIRECT_MAX_LENGTH]
    paths = (("auto", "compiled direct form (numba)", args.lengths),
             ("torch", "PyTorch blocked direct form", blocked_lengths))  # fmt: skip
    for backend, title, lengths in paths:
        os.environ[SCAN_BACKEND_ENV] = backend
        rows = []
        for length in lengths:
            x = torch.randn(max(1, args.tokens // length), length, mixer.num_heads * mixer.head_dim, requires_grad=True)
            direct, fft = (mixer.mix(x, None, None, direct_max_length=limit)[-1] for limit in (length, 0))
            torch.testing.assert_close(direct, fft, rtol=1e-4, atol=1e-4)

            def step(limit, x=x):
                return lambda: mixer.mix(x, None, None, direct_max_length=limit)[-1].sum().backward()

            fft_seconds, direct_seconds = (median_time(step(limit), args.repeats) for limit in (0, length))
            rows.append((f"T={length}, B={x.shape[0]}", fft_seconds, direct_seconds))
        print(f"\n### FFT form against the {title}\n")
        print_table(rows, unit="s", ours="FFT", reference="direct")
    if previous is None:
        os.environ.pop(SCAN_BACKEND_ENV)
    else:
        os.environ[SCAN_BACKEND_ENV] = previous
    print(f"\nshipped COMPILED_DIRECT_MAX_LENGTH = {COMPILED_DIRECT_MAX_LENGTH}")
    print(f"\nshipped DIRECT_MAX_LENGTH = {DIRECT_MAX_LENGTH}")


if __name__ == "__main__":
    run_recorded(main)
