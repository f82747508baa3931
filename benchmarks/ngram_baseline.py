"""Benchmark: incremental in-context n-gram (P1 Appendix C.1, DESIGN §5.3) vs per-prefix refit.

    OMP_NUM_THREADS=1 python benchmarks/ngram_baseline.py [--instances 10] [--repeats 3]

Both run side by side in this process on the same RegBench test instances (n2500 config, seed 0);
"reference" is the brute-force per-prefix refit of Algorithm 1 (``benchmarks/_refit_ngram.py``, the way
the authors' code computes it). Times are the median of ``--repeats`` runs after one warm-up;
ratio = reference / ours (speed-up). Outputs are checked equal before timing.
"""

from __future__ import annotations

import argparse

import numpy as np
from _refit_ngram import refit_predict_proba
from common import add_output_argument, median_time, run_recorded

from hf_icl.baselines import InContextNGram
from hf_icl.tasks.regbench import RegBenchConfig, generate_regbench


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    add_output_argument(parser)
    args = parser.parse_args()
    rows = generate_regbench(RegBenchConfig(name="n2500", n_train=0, n_validation=0))["test"]
    texts = [row["text"] for row in rows[: args.instances]]
    tokens = sum(len(t) for t in texts)
    print(f"{len(texts)} RegBench test instances, {tokens} tokens; median of {args.repeats} after warm-up\n")
    print("| case | ours | reference | ratio |")
    print("|---|---|---|---|")
    for n, variant in ((2, "paper"), (3, "paper"), (3, "normalized")):
        model = InContextNGram(n, variant)
        for text in texts:  # same artifacts before timing anything
            assert np.allclose(model.predict_proba(text), refit_predict_proba(text, n, variant))
        ours = median_time(lambda m=model: [m.predict_proba(t) for t in texts], repeats=args.repeats, warmup=1)
        ref = median_time(
            lambda n=n, v=variant: [refit_predict_proba(t, n, v) for t in texts], repeats=args.repeats, warmup=1
        )
        case = f"{n}-gram {variant}, {len(texts)} instances: incremental vs per-prefix refit"
        print(f"| {case} | {ours * 1e3:.1f} ms | {ref * 1e3:.1f} ms | {ref / ours:.0f}x |")
    full = [row["text"] for row in rows]
    model = InContextNGram(3)
    seconds = median_time(lambda: [model.predict_proba(t) for t in full], repeats=args.repeats, warmup=1)
    print(f"\nours, 3-gram paper on all {len(full)} test instances: {seconds:.2f} s")


if __name__ == "__main__":
    run_recorded(main)
