"""Issue 30's speed levers for the RegBench CPU recipe, measured instead of assumed: `torch.compile`, bf16 autocast
and flushing denormals to zero against the eager fp32 training step the recipe uses.

Run: `OMP_NUM_THREADS=1 python benchmarks/training_levers.py [--threads 1 --repeats 5 --rounds 2 --steps 20]
[--architecture mamba]`.

The model is the recipe's (`experiments/configs/regbench_cpu.yaml`: the `tiny` Transformer, 4 layers, RoPE; another
zoo architecture at the same preset and depth with `--architecture`) and a
step is forward, backward and an AdamW update on one batch of 32 RegBench training rows (padded, pad labels
ignored). Each lever gets its own copy of the same initial weights; the levers are timed interleaved over rounds
(process CPU time, median of repeats after a warm-up; the best round is kept), so load from other jobs disturbs the
ratio far less than the absolute numbers. ratio = reference / lever time (above 1: the lever is faster). The
second table checks that a lever "holds the loss curve": `--steps` identical steps from the same weights on the
same batches, the training loss of each, and the largest gap to fp32's. bf16 uses `torch.autocast("cpu", bfloat16)`
with fp32 master weights, as `train.py --mixed-precision bf16` does. "flush denormals" runs the eager fp32 step under
`torch.set_flush_denormal(True)` (the x86 FTZ/DAZ flags of the calling thread, which also runs the numba kernels on
one thread): products that fall below float32's normal range (about 1e-38), such as decays multiplied down a long
recurrence, become 0 instead of taking the slow denormal path; the setting is restored after each of its steps.
"""

from __future__ import annotations

import argparse
import copy
import time

import torch
from common import add_output_argument, median_time, run_recorded
from transformers import AutoModelForCausalLM

import hf_icl
from hf_icl.tasks import load_task
from hf_icl.tasks.regbench import regbench_tokenizer


def recipe_model(architecture: str = "transformer"):
    config = hf_icl.config_for(architecture, "tiny", vocab_size=len(regbench_tokenizer()), num_hidden_layers=4,
                               position_embedding="rope")  # fmt: skip
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(config).train()


def batches(count: int, size: int = 32) -> list[dict]:
    rows = load_task("regbench", n_train=count * size, n_validation=1, n_test=1)["train"]
    tokenizer = regbench_tokenizer()
    out = []
    for start in range(0, count * size, size):
        encoded = tokenizer(rows["text"][start : start + size], padding=True, return_tensors="pt")
        labels = encoded["input_ids"].masked_fill(encoded["attention_mask"] == 0, -100)
        out.append({"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"], "labels": labels})
    return out


class Lever:
    """One way to run the training step: a model copy, its optimiser, and the forward it calls."""

    def __init__(self, name: str, model, compiled: bool = False, bf16: bool = False, flush_denormal: bool = False):
        self.name, self.model, self.bf16, self.flush_denormal = name, model, bf16, flush_denormal
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.999), weight_decay=0.1)
        self.forward = torch.compile(model, dynamic=True) if compiled else model

    def step(self, batch: dict) -> float:
        if not self.flush_denormal:
            return self._step(batch)
        if not torch.set_flush_denormal(True):
            raise SystemExit("flush denormals: this CPU does not support it (torch.set_flush_denormal returned False)")
        try:
            return self._step(batch)
        finally:
            torch.set_flush_denormal(False)

    def _step(self, batch: dict) -> float:
        self.optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):
            loss = self.forward(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        return float(loss)


def levers(base) -> list[Lever]:
    return [
        Lever("eager fp32 (reference)", copy.deepcopy(base)),
        Lever("torch.compile fp32", copy.deepcopy(base), compiled=True),
        Lever("eager bf16 autocast", copy.deepcopy(base), bf16=True),
        Lever("eager fp32, flush denormals", copy.deepcopy(base), flush_denormal=True),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--architecture", default="transformer", choices=hf_icl.list_architectures(),
                        help="the model's architecture (default: the recipe's)")  # fmt: skip
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=20, help="identical steps of the loss-curve check")
    add_output_argument(parser)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    data = batches(max(args.steps, 1))
    base = recipe_model(args.architecture)
    timed = levers(base)
    started = time.perf_counter()
    for lever in timed:  # compiles once here (dynamic shapes), outside the timing
        lever.step(data[0])
    print(f"warm-up (torch.compile included): {time.perf_counter() - started:.0f} s\n")
    best = {lever.name: float("inf") for lever in timed}
    for _ in range(args.rounds):
        for lever in timed:
            seconds = median_time(lambda lever=lever: lever.step(data[0]), repeats=args.repeats, clock="process")
            best[lever.name] = min(best[lever.name], seconds)
    reference = best[timed[0].name]
    shape = tuple(data[0]["input_ids"].shape)
    print(f"RegBench recipe model ({args.architecture}), batch 32 ({shape} tokens), {args.threads} thread(s), "
          "process time per training step; ratio = reference / lever\n")  # fmt: skip
    print("| lever | step (s) | eager fp32 (s) | ratio |")
    print("|---|---|---|---|")
    for name, seconds in best.items():
        print(f"| {name} | {seconds:.4g} | {reference:.4g} | {reference / seconds:.3f} |")

    curves = {}
    for lever in levers(base):
        curves[lever.name] = [lever.step(batch) for batch in data[: args.steps]]
    fp32 = curves[timed[0].name]
    print(f"\nTraining loss at each of {args.steps} identical steps from the same weights (the curve to hold):\n")
    print("| lever | loss at step 1 | loss at the last step | largest gap to fp32 |")
    print("|---|---|---|---|")
    for name, losses in curves.items():
        gap = max(abs(a - b) for a, b in zip(losses, fp32))
        print(f"| {name} | {losses[0]:.4f} | {losses[-1]:.4f} | {gap:.2e} |")


if __name__ == "__main__":
    run_recorded(main)
