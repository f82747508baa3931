"""One forward+backward of every zoo architecture against the Transformer's at the RegBench recipe's shape (issue 50).

Run: `OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python benchmarks/zoo_step_cost.py [--architectures A ...]
[--output docs/results/benchmarks/zoo_step_cost.json]`. The shape is the recipe's
(`experiments/configs/regbench_cpu.yaml`: tiny preset, 4 layers, batch 32) at 384 tokens, one thread. A step is
`model(input_ids, labels=input_ids).loss` and its backward (no optimiser: its cost is the same per parameter for
every model). Each architecture and the Transformer are timed in the same process, interleaved step by step: after
two warm-up steps each, every round times `--repeats` steps of each side back to back (process CPU time), ours first
in even rounds and the Transformer first in odd ones, so that neither side always runs after the other. The columns
are each side's median over rounds, `ratio` = the median of the per-round ratios (ours / the Transformer's), and its
quartiles over the rounds: on this VM a side's step time drifts by 20 % within minutes, and a ratio measured over
many short adjacent pairs holds far better than one over a few long blocks (three rounds of three repeats moved a
ratio by ±0.2 between runs). Target: every zoo architecture ≤ 1.3.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from common import add_output_argument, check_architectures, run_recorded
from transformers import AutoModelForCausalLM

import hf_icl

ZOO = ("llama", "retnet", "gla", "rwkv", "h3", "hyena", "mamba", "s4", "lstm", "linear_transformer", "mamba2",
       "deltanet", "gated_deltanet", "rwkv7", "based")  # fmt: skip
"""P1's zoo and the 2024-25 rows (the Transformer is the reference)."""
TARGET = 1.3


def forward_backward(architecture: str, layers: int, input_ids: torch.Tensor):
    torch.manual_seed(0)
    config = hf_icl.config_for(architecture, "tiny", vocab_size=20, num_hidden_layers=layers)
    model = AutoModelForCausalLM.from_config(config).train()

    def step():
        model.zero_grad(set_to_none=True)
        model(input_ids=input_ids, labels=input_ids).loss.backward()

    return step


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--architectures", nargs="*", default=list(ZOO))
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=384)
    parser.add_argument("--repeats", type=int, default=1, help="steps of each side per round")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds; the median per-round ratio counts")
    add_output_argument(parser)
    args = parser.parse_args(argv)
    check_architectures(parser, args.architectures)
    torch.set_num_threads(1)
    input_ids = torch.randint(0, 20, (args.batch, args.length), generator=torch.Generator().manual_seed(0))
    reference = forward_backward("transformer", args.layers, input_ids)
    rows, over = [], []
    for architecture in args.architectures:
        step = forward_backward(architecture, args.layers, input_ids)
        for _ in range(2):  # warm-up: allocator, numba dispatch, first-touch pages
            step(), reference()
        ours, theirs = [], []
        for round_ in range(args.rounds):
            pair = (step, reference) if round_ % 2 == 0 else (reference, step)
            seconds = {fn: cpu_seconds(fn, args.repeats) for fn in pair}
            ours.append(seconds[step])
            theirs.append(seconds[reference])
        ratios = sorted(a / b for a, b in zip(ours, theirs, strict=True))
        low, _, high = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
        ratio = statistics.median(ratios)
        case = f"{architecture}, tiny, {args.layers} layers, B={args.batch}, T={args.length}"
        rows.append((case, statistics.median(ours), statistics.median(theirs), ratio, low, high))
        if ratio > TARGET:
            over.append(f"{architecture} {ratio:.2f}x")
    print("| case | ours (s) | transformer (s) | ratio | ratio quartiles |")
    print("|---|---|---|---|---|")
    for case, ours_s, theirs_s, ratio, low, high in rows:
        print(f"| {case} | {ours_s:.4g} | {theirs_s:.4g} | {ratio:.3f} | {low:.3f}-{high:.3f} |")
    print(f"\nover the {TARGET}x target: " + (", ".join(over) if over else "none"))


def cpu_seconds(fn, repeats: int) -> float:
    """This process's CPU seconds per call of `fn`, over `repeats` calls."""
    start = time.process_time()
    for _ in range(repeats):
        fn()
    return (time.process_time() - start) / repeats


if __name__ == "__main__":
    run_recorded(main)
