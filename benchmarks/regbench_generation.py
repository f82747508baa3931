"""Benchmark: RegBench generation speed (P1 §3.3, DESIGN §5.1) at N = 40000.

    OMP_NUM_THREADS=1 python benchmarks/regbench_generation.py [--repeats 3]

"ours" is N = 40000 (41000 automata and instances with validation and test); "reference" is the
N = 2500 run (3500 instances) of the same code in this process, scaled linearly to 41000 instances, so
ratio = ours / reference ≈ 1 means generation cost is linear in N (no slowdown from rejecting
isomorphic automata). Rows: the sampler alone (``generate_regbench``) and the full builder
(``load_task``: sampling + Arrow encoding + writing, in a fresh cache directory each run).
Times are medians of ``--repeats`` runs after a warm-up.
"""

from __future__ import annotations

import argparse
import tempfile

import datasets
from common import add_output_argument, median_time, run_recorded

from hf_icl.tasks import load_task
from hf_icl.tasks.regbench import RegBenchConfig, generate_regbench


def _build(n_train: int) -> None:
    with tempfile.TemporaryDirectory() as cache:
        load_task("regbench", cache_dir=cache, config_name="n40000", n_train=n_train)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    add_output_argument(parser)
    args = parser.parse_args()
    datasets.disable_progress_bars()
    big, small = 40000 + 1000, 2500 + 1000  # instances incl. validation + test
    generate_regbench(RegBenchConfig(name="warmup", n_train=500))  # warm-up
    _build(150)
    print(f"median of {args.repeats} after warm-up; reference = N=2500 time x {big}/{small}\n")
    print("| case | ours | reference | ratio |")
    print("|---|---|---|---|")
    for label, fn in (
        ("sampler (generate_regbench)", lambda n: generate_regbench(RegBenchConfig(name="b", n_train=n))),
        ("builder (load_task, fresh cache)", _build),
    ):
        ours = median_time(lambda f=fn: f(40000), repeats=args.repeats, warmup=1)
        ref = median_time(lambda f=fn: f(2500), repeats=args.repeats, warmup=1) * big / small
        print(f"| {label}, N=40000: seconds | {ours:.2f} s | {ref:.2f} s | {ours / ref:.2f} |")
        print(f"| {label}, N=40000: instances/s | {big / ours:,.0f} | {big / ref:,.0f} | {ref / ours:.2f} |")


if __name__ == "__main__":
    run_recorded(main)
