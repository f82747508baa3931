"""Training tokens/s on real RegBench batches: `icl_transformer` against `transformers.GPT2LMHeadModel` (issue #16).

Run: `OMP_NUM_THREADS=2 python benchmarks/training_throughput.py [--presets tiny small --batches 6 --rounds 3]`.

Both models get the same batches: the first `--batches` length-grouped batches of RegBench N=2500 (batch 32) that
`train.py` trains on, right-padded. A step is forward + backward + AdamW update; tokens/s counts the real (non-pad)
tokens. Cases, each timed alternately with its reference in one process (the best of `--rounds` rounds):

- fp32 vs fp32 at equal size (target ≥ 1.3×): identical width, depth, heads, MLP width, learned positions, LayerNorm,
  tanh GELU, tied embeddings, SDPA attention. GPT-2 is run as transformers ships it (`gelu_new`); ours uses the
  same function as one fused kernel (`gelu_pytorch_tanh`).
- ours with bf16 autocast (fp32 master weights, as `--mixed-precision bf16`) vs GPT-2 fp32 (target ≥ 2.5× at small).
"""

from __future__ import annotations

import argparse
import time

import torch
from common import add_output_argument, print_table, run_recorded
from transformer_vs_gpt2 import gpt2_like
from transformers import AutoModelForCausalLM

import hf_icl
from hf_icl.tasks import TaskRequest, family_of
from hf_icl.training.data import LengthGroupedEpochSampler


def regbench_batches(count: int, batch_size: int = 32) -> list[dict]:
    """The first `count` training batches `train.py` would draw (length-grouped, seed 0, epoch 0)."""
    data = family_of("regbench").prepare_data(TaskRequest("regbench", n_train=2500))
    order = list(LengthGroupedEpochSampler(data.lengths, batch_size, seed=0))
    return [data.collate([data.train[i] for i in order[b * batch_size : (b + 1) * batch_size]]) for b in range(count)]


def tokens_per_second(model, batches, bf16: bool) -> float:
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model.train()

    def step(batch):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = model(input_ids=batch["input_ids"], labels=batch["labels"], use_cache=False).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    step(batches[0])  # warm-up
    started = time.perf_counter()
    for batch in batches:
        step(batch)
    seconds = time.perf_counter() - started
    return sum(int((b["labels"] != -100).sum()) for b in batches) / seconds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--presets", nargs="+", default=["tiny", "small"])
    parser.add_argument("--batches", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    add_output_argument(parser)
    args = parser.parse_args()
    batches = regbench_batches(args.batches)
    padding = 1 - sum(int((b["labels"] != -100).sum()) for b in batches) / sum(b["labels"].numel() for b in batches)
    rows = []
    for preset in args.presets:
        config = hf_icl.config_for("transformer", preset, vocab_size=20)
        torch.manual_seed(0)
        ours = AutoModelForCausalLM.from_config(config, attn_implementation="sdpa")
        reference = gpt2_like(config)
        assert ours.num_parameters() == reference.num_parameters()
        best = {"ours": 0.0, "ours_bf16": 0.0, "gpt2": 0.0}
        for _ in range(args.rounds):  # interleave rounds so drift in machine load hits all alike
            best["ours"] = max(best["ours"], tokens_per_second(ours, batches, bf16=False))
            best["gpt2"] = max(best["gpt2"], tokens_per_second(reference, batches, bf16=False))
            best["ours_bf16"] = max(best["ours_bf16"], tokens_per_second(ours, batches, bf16=True))
        rows.append((f"{preset}: icl_transformer fp32 vs GPT-2 fp32", best["ours"], best["gpt2"]))
        rows.append((f"{preset}: icl_transformer bf16 autocast vs GPT-2 fp32", best["ours_bf16"], best["gpt2"]))
    print(f"threads={torch.get_num_threads()}, {args.batches} RegBench batches of 32, padding {padding:.1%}\n")
    print_table(rows, unit="tokens/s", ours="ours", reference="GPT2LMHeadModel")


if __name__ == "__main__":
    run_recorded(main)
