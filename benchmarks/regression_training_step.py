"""Training steps per second of every architecture's in-context regression model against the Transformer's (issue #12).

Run: `OMP_NUM_THREADS=1 python benchmarks/regression_training_step.py [--preset tiny --task linear_regression
--points 41 --dims 20 --batch 64]`. P5's CPU runs (`experiments/configs/p5_table1_cpu.yaml`: Transformer 4 blocks,
Mamba 6, MambaFormer 8) are `--dims 5 --points 26 --batch 128 --layers transformer=4 mamba=6 mambaformer=8`, with
`--task cot_io --task-option hidden_size=4` for chain-of-thought I/O (3 tokens a point: x, the steps s, y).

A step is `model(xs=, ys=)` (the interleaved prompt), backward and an Adam update, on one batch of the task's
prompts; each architecture and the Transformer are timed in the same process, interleaved in rounds (warm-up, then the
median of repeats in process CPU time). The steps/s columns are each side's median over rounds; `ratio` = ours /
reference steps per second, the median of the per-round ratios (each round's two sides timed back to back, so the
drift of a shared machine cancels), so below 1 is slower than the Transformer.
"""

from __future__ import annotations

import argparse
import statistics

import torch
from common import add_output_argument, median_ratio, median_time, print_table, run_recorded

import hf_icl
from hf_icl.evaluation.flops import forward_flops
from hf_icl.tasks.function_classes import model_inputs, output_dim, sample


def training_step(model, optimizer, batch):
    def step():
        optimizer.zero_grad(set_to_none=True)
        model(**batch).loss.backward()
        optimizer.step()

    return step


def build(arch: str, preset: str, task: str, dims: int, layers: dict[str, int], cot_dim: int | None = None):
    overrides = {"num_hidden_layers": layers[arch]} if arch in layers else {}
    if cot_dim is not None:  # chain-of-thought tasks feed their intermediate steps `ss`
        overrides["cot_dim"] = cot_dim
    config = hf_icl.config_for(arch, preset, input_dim=dims, output_dim=output_dim(task, dims), **overrides)
    torch.manual_seed(0)
    model = hf_icl.AutoModelForInContextRegression.from_config(config).train()
    return model, torch.optim.Adam(model.parameters(), lr=1e-4)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--task", default="linear_regression")
    parser.add_argument("--points", type=int, default=41)
    parser.add_argument("--dims", type=int, default=20)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; the median per-round ratio counts")
    parser.add_argument("--architectures", nargs="*", default=hf_icl.list_architectures())
    parser.add_argument("--layers", nargs="*", default=[], metavar="ARCH=N", help="blocks (else the preset's)")
    parser.add_argument("--task-option", nargs="*", default=[], metavar="FIELD=VALUE", help="integer task options")
    add_output_argument(parser)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    layers = {arch: int(n) for arch, n in (item.split("=", 1) for item in args.layers)}
    options = {field: int(value) for field, value in (item.split("=", 1) for item in args.task_option)}
    batch = model_inputs(sample(args.task, args.batch, args.points, args.dims, seed=0, **options))
    cot_dim = batch["ss"].shape[-1] if "ss" in batch else None  # (B, N, S) intermediate steps
    reference = build("transformer", args.preset, args.task, args.dims, layers, cot_dim)
    reference_step = training_step(*reference, batch)
    length = batch["xs"].shape[1] * (3 if cot_dim else 2)  # tokens per prompt: x, (s,) y per point
    reference_flops = forward_flops(reference[0], length)
    rows, arithmetic = [], []
    for arch in args.architectures:
        model, optimizer = build(arch, args.preset, args.task, args.dims, layers, cot_dim)
        step, times = training_step(model, optimizer, batch), []
        for _ in range(args.rounds):  # interleaved rounds: each round's ratio shares the machine's moment
            times.append((median_time(step, repeats=args.repeats, clock="process"),
                          median_time(reference_step, repeats=args.repeats, clock="process")))  # fmt: skip
        ours_times, reference_times = zip(*times)
        ours, theirs = (1 / statistics.median(column) for column in (ours_times, reference_times))
        blocks = f", {layers[arch]} blocks" if arch in layers else ""
        case = f"{arch}, {args.preset}{blocks}, B={args.batch}, N={args.points} ({length} tokens)"
        rows.append((case, ours, theirs, median_ratio(reference_times, ours_times)))  # steps/s: ours ÷ reference
        arithmetic.append((arch, forward_flops(model, length) / 1e6, reference_flops / 1e6))
    print_table(rows, unit="steps/s", reference="transformer")
    print("\nForward arithmetic per sequence (P5 App. C counting; a ratio above 1 is work the architecture defines,")
    print("e.g. RegularGPT applies its blocks once per depth level, ceil(log_C T) times):\n")
    print_table(arithmetic, unit="MFLOP", reference="transformer")
    print(
        "\nArithmetic rate: forward MFLOP per second of training, i.e. steps/s x MFLOP per sequence (the same for both"
    )
    print(
        "sides' batch), against the Transformer's. Overhead per step shows here even where the step does more work:\n"
    )
    rates = [
        (case, ours * flops, theirs * ref_flops, ratio * flops / ref_flops)
        for (case, ours, theirs, ratio), (_, flops, ref_flops) in zip(rows, arithmetic)
    ]
    print_table(rates, unit="MFLOP/s per sequence", reference="transformer")
    named = {arch: row[3] for row, (arch, _, _) in zip(rows, arithmetic)}  # steps/s ratios
    rate = {arch: row[3] for row, (arch, _, _) in zip(rates, arithmetic)}  # arithmetic rates
    verdict = {True: "met", False: "NOT met"}
    targets = [arch for arch in ("h3", "mamba", "rwkv") if arch in named]
    if targets:
        print(
            "\nShort-sequence target (steps/s >= 0.5x the Transformer's): "
            + ", ".join(f"{arch} {named[arch]:.3f} {verdict[named[arch] >= 0.5]}" for arch in targets)
        )
    if "regular_gpt" in named:  # its arithmetic per sequence is several times the Transformer's (second table)
        print(
            f"RegularGPT (arithmetic-bound): steps/s {named['regular_gpt']:.3f} of the Transformer's; arithmetic "
            f"rate {rate['regular_gpt']:.3f} (target >= 0.5: {verdict[rate['regular_gpt'] >= 0.5]})"
        )


if __name__ == "__main__":
    run_recorded(main)
