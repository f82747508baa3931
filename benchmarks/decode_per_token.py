"""Per-token greedy decode time through the cache at context 128 against 2048, for every registered architecture.

Run: `PYTHONPATH=. python benchmarks/decode_per_token.py [--preset small --contexts 128 2048 --steps 48]`.

Each architecture (all of `hf_icl.list_architectures()`, so new ones are picked up automatically) is built at the
same preset with vocabulary 20 and `max_position_embeddings` large enough for the longest context (only learned
positions use it). For each context, one sequence of that many random tokens is prefilled; then every
(architecture, context) pair decodes one greedy token through its cache (`cache`, no_grad, one thread) per
round, round after round, so all pairs see the same machine load. The figure is the median over the timed rounds
(after warm-up rounds) of each step's process CPU time: with one thread that equals wall time on a quiet machine,
and it is not inflated while other processes hold the cores (`common.median_time` times wall clock, hence the loop).

A recurrent architecture (`model.model.state_size()` is not None) should cost the same per token at any context:
target 2048/128 ≤ 1.3. "× transformer" is the time relative to `icl_transformer` at the same context. The state
columns are the zoology-style state size: the bytes per sequence the cache holds after each prefill (a recurrent
model's fixed state; attention's keys and values, Hyena's histories, which grow with the context).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from common import add_output_argument, run_recorded
from transformers import AutoModelForCausalLM

import hf_icl

TARGET = 1.3


class GreedyDecoder:
    """One prefilled sequence that decodes one more greedy token per `step()` through its cache."""

    @torch.no_grad()
    def __init__(self, model, context: int, vocab: int):
        self.model = model
        prompt = torch.randint(1, vocab, (1, context), generator=torch.Generator().manual_seed(context))
        out = model(prompt, use_cache=True)
        self.cache, self.token = out.cache, out.logits[:, -1:].argmax(-1)  # token (1, 1)
        self.state_bytes = self.cache.nbytes_per_sequence()  # after the prefill of `context` tokens

    @torch.no_grad()
    def step(self) -> float:
        """Decode the next token; return the step's process CPU time in seconds."""
        start = time.process_time()
        out = self.model(self.token, cache=self.cache, use_cache=True)
        self.cache, self.token = out.cache, out.logits[:, -1:].argmax(-1)
        return time.process_time() - start


def build(arch: str, args):
    longest = max(args.contexts) + args.warmup + args.steps + 1
    config = hf_icl.config_for(arch, args.preset, vocab_size=args.vocab, max_position_embeddings=longest)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config).eval()
    return model, {ctx: GreedyDecoder(model, ctx, args.vocab) for ctx in args.contexts}


def print_results(times, states, state_bytes, failures, args) -> None:
    short, long = args.contexts
    reference = times["transformer"]
    print(f"preset={args.preset} threads={torch.get_num_threads()} rounds={args.steps} (median) vocab={args.vocab}\n")
    print(
        f"| architecture | state (bytes/seq) @{short} | state (bytes/seq) @{long} | ms/token @{short} "
        f"| ms/token @{long} | {long}/{short} | × transformer @{short} | × transformer @{long} |"
    )
    print("|---|---|---|---|---|---|---|---|")
    missed = []
    for arch, per_context in times.items():
        ratio = per_context[long] / per_context[short]
        if states[arch] is not None and ratio > TARGET:
            missed.append(arch)
        fixed = "" if states[arch] is not None else " (grows)"
        print(
            f"| {arch} | {state_bytes[arch][short]}{fixed} | {state_bytes[arch][long]}{fixed} "
            f"| {per_context[short]:.3f} | {per_context[long]:.3f} | {ratio:.2f} "
            f"| {per_context[short] / reference[short]:.2f} | {per_context[long] / reference[long]:.2f} |"
        )
    for arch, error in failures.items():
        print(f"| {arch} | failed: {error[:100]} | | | | | | |")
    recurrent = [arch for arch in times if states[arch] is not None]
    verdict = "all within target" if not missed else f"over target: {', '.join(missed)}"
    print(f"\nrecurrent architectures ({', '.join(recurrent) or 'none'}): {long}/{short} ≤ {TARGET}: {verdict}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--preset", default="small")
    parser.add_argument("--contexts", type=int, nargs=2, default=[128, 2048])
    parser.add_argument("--steps", type=int, default=48, help="timed rounds (one token per pair per round)")
    parser.add_argument("--warmup", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=20)
    parser.add_argument("--architectures", nargs="*", default=None, help="default: every registered architecture")
    add_output_argument(parser)
    args = parser.parse_args()
    torch.set_num_threads(1)
    archs = args.architectures or hf_icl.list_architectures()
    archs = ["transformer", *[arch for arch in archs if arch != "transformer"]]  # the reference column first
    decoders, states, failures = {}, {}, {}
    for arch in archs:
        try:
            model, decoders[arch] = build(arch, args)
            states[arch] = model.model.state_size()
        except Exception as error:  # report the others even if one architecture is broken
            failures[arch] = f"{type(error).__name__}: {error}"
    samples = {arch: {ctx: [] for ctx in args.contexts} for arch in decoders}
    for round_ in range(args.warmup + args.steps):
        for arch, per_context in list(decoders.items()):
            order = list(per_context.items())
            for ctx, decoder in order if round_ % 2 else order[::-1]:  # alternate: neither runs on warmer caches
                try:
                    elapsed = decoder.step()
                except Exception as error:
                    failures[arch] = f"{type(error).__name__}: {error}"
                    del decoders[arch], samples[arch]
                    break
                if round_ >= args.warmup:
                    samples[arch][ctx].append(elapsed)
    times = {arch: {ctx: 1000 * statistics.median(s) for ctx, s in per.items()} for arch, per in samples.items()}
    state_bytes = {arch: {ctx: d.state_bytes for ctx, d in per.items()} for arch, per in decoders.items()}
    print_results(times, states, state_bytes, failures, args)


if __name__ == "__main__":
    run_recorded(main)
