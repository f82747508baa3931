"""Where a RegBench zoo run's CPU time goes besides its forward+backward steps (issue 50: "whole runs also cost more
than their steps").

Run: `OMP_NUM_THREADS=1 python benchmarks/run_time_breakdown.py [--architectures transformer mamba2 ...]
[--steps 60] [--output docs/results/benchmarks/run_time_breakdown.json]`.

Each architecture trains `--steps` steps of the RegBench recipe (`experiments/configs/regbench_cpu.yaml`, one
thread, a checkpoint every `--steps // 2` steps) through `train.py`'s own entry point, with the loop's parts timed in
process CPU time: forward+backward (`backward_in_micro_batches`), the optimiser update (AdamW), the next batch from
the data stream, gradient clipping and the rest of the loop (logging, scheduler), checkpoints, and the test-split
evaluation after training (which `train.cpu_time_s`, the runs page's budget, leaves out). The shares are of the
training loop's CPU time; `projected` is the recipe's 3,000 steps with its 6 checkpoints at the measured rates.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import tempfile
import time
from collections import defaultdict

from accelerate.optimizer import AcceleratedOptimizer
from common import add_output_argument, check_architectures, run_recorded

import hf_icl.training.loop as loop
from hf_icl.training import main as train_main

RECIPE = "experiments/configs/regbench_cpu.yaml"
RECIPE_STEPS, RECIPE_CHECKPOINTS = 3000, 6


class PartTimer:
    """Process CPU seconds per named part, from wrappers put around the loop's functions for one run."""

    def __init__(self):
        self.seconds = defaultdict(float)
        self.calls = defaultdict(int)
        self.restore = []
        self.shapes = []  # (rows, padded length, real tokens) of every training batch

    def record_shapes(self) -> None:
        """Note each training batch's shape as `backward_in_micro_batches` receives it."""
        original = loop.backward_in_micro_batches

        def noted(run, model, batch):
            rows, length = batch["input_ids"].shape
            mask = batch.get("attention_mask")
            self.shapes.append((rows, length, int(mask.sum()) if mask is not None else rows * length))
            return original(run, model, batch)

        loop.backward_in_micro_batches = noted
        self.restore.append((loop, "backward_in_micro_batches", original))

    def wrap(self, owner, name: str, part: str) -> None:
        original = getattr(owner, name)

        def timed(*args, **kwargs):
            start = time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[part] += time.process_time() - start
                self.calls[part] += 1

        setattr(owner, name, timed)
        self.restore.append((owner, name, original))

    def wrap_batches(self) -> None:
        """Time each `next()` on the loop's batch stream."""
        original = loop.batch_stream
        timer = self

        def stream(*args, **kwargs):
            inner = original(*args, **kwargs)
            iter_from = inner.iter_from

            def timed_iter(step):
                batches = iter_from(step)
                while True:
                    start = time.process_time()
                    try:
                        batch = next(batches)
                    except StopIteration:
                        return
                    finally:
                        timer.seconds["data"] += time.process_time() - start
                    yield batch

            inner.iter_from = timed_iter
            return inner

        loop.batch_stream = stream
        self.restore.append((loop, "batch_stream", original))

    def undo(self) -> None:
        for owner, name, original in reversed(self.restore):
            setattr(owner, name, original)


def breakdown(architecture: str, steps: int) -> dict:
    timer = PartTimer()
    timer.wrap(loop, "run_steps", "loop")
    timer.record_shapes()
    timer.wrap(loop, "backward_in_micro_batches", "forward_backward")
    timer.wrap(AcceleratedOptimizer, "step", "optimizer")
    timer.wrap(loop, "save_checkpoint", "checkpoints")
    timer.wrap(loop, "finish_run", "evaluation")
    timer.wrap_batches()
    try:
        with tempfile.TemporaryDirectory() as folder, contextlib.redirect_stdout(io.StringIO()):  # its own reports
            train_main(["--config", RECIPE, "--architecture", architecture, "--max-steps", str(steps),
                        "--checkpoint-every", str(max(1, steps // 2)), "--threads", "1", "--report-to", "none",
                        "--output-dir", f"{folder}/run"])  # fmt: skip
    finally:
        timer.undo()
    seconds = dict(timer.seconds)
    parts = ("forward_backward", "optimizer", "data", "checkpoints")
    seconds["rest"] = seconds["loop"] - sum(seconds[k] for k in parts)
    seconds["checkpoint_each"] = seconds["checkpoints"] / max(1, timer.calls["checkpoints"])
    rows, lengths, tokens = zip(*timer.shapes)
    seconds["mean_length"] = sum(lengths) / len(lengths)
    seconds["max_length"] = max(lengths)
    seconds["padding"] = 1 - sum(tokens) / sum(r * n for r, n in zip(rows, lengths))
    return seconds


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--architectures", nargs="*", default=["transformer", "mamba2", "h3", "rwkv7"])
    parser.add_argument("--steps", type=int, default=60)
    add_output_argument(parser)
    args = parser.parse_args(argv)
    check_architectures(parser, args.architectures)
    if args.steps < 2:
        parser.error(f"argument --steps: must be at least 2, got {args.steps}")
    print(f"RegBench recipe ({RECIPE}), {args.steps} steps, one thread; CPU seconds per step, and each part's share "
          "of the training loop\n")  # fmt: skip
    print("| architecture | forward+backward (s/step) | forward+backward | optimiser | data | checkpoints | rest "
          "| checkpoint (s each) | test evaluation (s) | projected 3,000-step loop (CPU min) | batch length: mean, max "
          "| padding |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for architecture in args.architectures:
        s = breakdown(architecture, args.steps)
        per_step = (s["loop"] - s["checkpoints"]) / args.steps
        projected = (per_step * RECIPE_STEPS + s["checkpoint_each"] * RECIPE_CHECKPOINTS) / 60
        shares = " | ".join(
            f"{100 * s[k] / s['loop']:.1f} %" for k in ("forward_backward", "optimizer", "data", "checkpoints", "rest")
        )
        print(f"| {architecture} | {s['forward_backward'] / args.steps:.3f} | {shares} | {s['checkpoint_each']:.2f} | "
              f"{s['evaluation']:.1f} | {projected:.1f} | {s['mean_length']:.0f}, {s['max_length']} | "
              f"{100 * s['padding']:.0f} % |")  # fmt: skip


if __name__ == "__main__":
    run_recorded(main)
