"""One forward+backward of every zoo architecture against the Transformer's at the RegBench recipe's shape (issue 50).

Run: `OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python benchmarks/zoo_step_cost.py [--architectures A ...]
[--output docs/results/benchmarks/zoo_step_cost.json]`. The shape is the recipe's
(`experiments/configs/regbench_cpu.yaml`: tiny preset, 4 layers, batch 32) at 384 tokens, one thread. A step is
`model(input_ids, labels=input_ids).loss` and its backward (no optimiser: its cost is the same per parameter for
every model). Each architecture and the Transformer are timed in the same process, interleaved in rounds (warm-up,
then the median of repeats in process CPU time); the columns are each side's median over rounds and `ratio` = ours /
the Transformer's step time, the median of the per-round ratios. Target: every zoo architecture ≤ 1.3.
"""

from __future__ import annotations

import argparse
import statistics

import torch
from common import add_output_argument, check_architectures, median_ratio, median_time, print_table, run_recorded
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
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; the median per-round ratio counts")
    add_output_argument(parser)
    args = parser.parse_args(argv)
    check_architectures(parser, args.architectures)
    torch.set_num_threads(1)
    input_ids = torch.randint(0, 20, (args.batch, args.length), generator=torch.Generator().manual_seed(0))
    reference = forward_backward("transformer", args.layers, input_ids)
    rows, over = [], []
    for architecture in args.architectures:
        step, times = forward_backward(architecture, args.layers, input_ids), []
        for _ in range(args.rounds):  # each round's two sides back to back: the machine's drift cancels
            times.append((median_time(step, repeats=args.repeats, clock="process"),
                          median_time(reference, repeats=args.repeats, clock="process")))  # fmt: skip
        ours, theirs = zip(*times)
        ratio = median_ratio(ours, theirs)
        case = f"{architecture}, tiny, {args.layers} layers, B={args.batch}, T={args.length}"
        rows.append((case, statistics.median(ours), statistics.median(theirs), ratio))
        if ratio > TARGET:
            over.append(f"{architecture} {ratio:.2f}x")
    print_table(rows, unit="s", reference="transformer")
    print(f"\nover the {TARGET}x target: " + (", ".join(over) if over else "none"))


if __name__ == "__main__":
    run_recorded(main)
