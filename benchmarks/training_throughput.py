"""Training tokens/s on real RegBench batches: `icl_transformer` against `transformers.GPT2LMHeadModel` (issue #16).

Run: `OMP_NUM_THREADS=2 python benchmarks/training_throughput.py [--presets tiny small --batches 6 --rounds 3]`.

Both models get the same batches: the first `--batches` length-grouped batches of RegBench N=2500 (batch 32) that
`train.py` trains on, right-padded. A step is forward + backward + AdamW update; tokens/s counts the real (non-pad)
tokens. Cases, each timed alternately with its reference in one process (the best of `--rounds` rounds):

- fp32 vs fp32 at equal size (target ≥ 1.3×): identical width, depth, heads, MLP width, learned positions, LayerNorm,
  tanh GELU, tied embeddings, SDPA attention. GPT-2 is run as transformers ships it (`gelu_new`); ours uses the
  same function as one fused kernel (`gelu_pytorch_tanh`).
- ours with bf16 autocast (fp32 master weights, as `--mixed-precision bf16`) vs GPT-2 fp32 (target ≥ 2.5× at small).

`--sections quickstart` (issue 54) times the step of the bare `accelerate launch train.py`: the model `train.py`
builds for RegBench's `quickstart` preset (4 layers, RoPE, P1's n-gram heads NGH1^(1,2,3)), its first `--batches`
training batches, and the full step (forward, backward, gradient clipping, AdamW). Its FLOPs are counted once per
batch by `torch.utils.flop_counter.FlopCounterMode` (matrix products; causal attention counted over its T(T+1)/2
query-key pairs, forward two products, backward four); the elementwise work counts nothing, so FLOP/s measures how
close the step runs to the matrix-product rate. The rate to compare with is a 1024 x 1024 fp32 GEMM timed in the
same process, on the same threads, in the same rounds. The step runs twice in each round: on the PyTorch paths
only (`HF_ICL_SCAN_BACKEND=torch`: ATen's GELU, the float64 prefix sums of the n-gram heads) and on the compiled
CPU paths the package takes by default (numba GELU and n-gram segmented sums).
"""

from __future__ import annotations

import argparse
import tempfile
import time

import torch
from common import add_output_argument, print_table, run_recorded, with_scan_backend
from torch.utils.flop_counter import FlopCounterMode, register_flop_formula
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


def _attention_pairs(query, key, is_causal) -> int:
    length, keys = query.shape[-2], key.shape[-2]
    return length * (length + 1) // 2 if is_causal else length * keys


def _heads_times_batch(query) -> int:
    return query.numel() // (query.shape[-2] * query.shape[-1])


# ATen's CPU flash attention has no formula in `FlopCounterMode`; these count what the CUDA ones count, over the
# query-key pairs a causal mask keeps.
@register_flop_formula(torch.ops.aten._scaled_dot_product_flash_attention_for_cpu, get_raw=True)
def _cpu_flash_forward_flops(query, key, value, dropout_p=0.0, is_causal=False, *args, out_val=None, **kwargs):
    return 2 * 2 * _heads_times_batch(query) * _attention_pairs(query, key, is_causal) * query.shape[-1]


@register_flop_formula(torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward, get_raw=True)
def _cpu_flash_backward_flops(grad_out, query, key, value, out, lse, dropout_p=0.0, is_causal=False, *args, **kwargs):
    kwargs.pop("out_val", None)
    return 4 * 2 * _heads_times_batch(query) * _attention_pairs(query, key, is_causal) * query.shape[-1]


def quickstart_step_rates(batch_count: int, rounds: int) -> None:
    """The bare `train.py` step's FLOP/s on both kernel paths against a 1024² fp32 GEMM, interleaved in rounds."""
    from hf_icl.training import loop
    from hf_icl.training.arguments import parse_args
    from hf_icl.training.data import batch_stream

    with tempfile.TemporaryDirectory() as folder:
        args = parse_args(["--output-dir", folder, "--threads", str(torch.get_num_threads())])
        run = loop.start_run(args)
        run.data = loop.prepare_data(run)
        model = loop.build_task_model(run).train()
    optimizer = loop.build_optimizer(model, args)
    batches = batch_stream(run.accelerator, run.data, args.batch_size, args.seed, args.curricula()).iter_from(0)
    batches = [next(batches) for _ in range(batch_count)]

    def step(batch):
        loss, _ = loop.total_loss(run, model, batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    flops = 0
    for batch in batches:
        with FlopCounterMode(display=False) as counter:
            step(batch)
        flops += counter.get_total_flops()
    left, right = torch.randn(1024, 1024), torch.randn(1024, 1024)

    def gemm_rate() -> float:
        left @ right  # warm-up
        started = time.perf_counter()
        for _ in range(20):
            left @ right
        return 20 * 2 * 1024**3 / (time.perf_counter() - started)

    paths = {"PyTorch paths only": "torch", "compiled CPU paths (default)": "auto"}
    best = {name: float("inf") for name in paths}
    gemm = 0.0
    for _ in range(rounds):
        gemm = max(gemm, gemm_rate())
        for name, backend in paths.items():
            with_scan_backend(lambda: step(batches[0]), backend)()  # warm-up (numba compiles on first use)
            started = time.perf_counter()
            for batch in batches:
                with_scan_backend(lambda batch=batch: step(batch), backend)()
            best[name] = min(best[name], (time.perf_counter() - started) / len(batches))
    tokens = sum(int(b["input_ids"].numel()) for b in batches) / len(batches)
    print(
        f"\nquickstart step: threads={torch.get_num_threads()}, {len(batches)} batches of {args.batch_size} "
        f"(~{tokens / args.batch_size:.0f} tokens a row), {flops / len(batches) / 1e9:.2f} GFLOP a step (counted), "
        f"1024² fp32 GEMM {gemm / 1e9:.1f} GFLOP/s; best of {rounds} rounds\n"
    )
    print("| path | step (s) | GFLOP/s | share of the GEMM rate |")
    print("|---|---|---|---|")
    for name, seconds in best.items():
        rate = flops / len(batches) / seconds
        print(f"| {name} | {seconds:.3f} | {rate / 1e9:.1f} | {rate / gemm:.3f} |")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--presets", nargs="+", default=["tiny", "small"])
    parser.add_argument("--batches", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--sections", nargs="+", choices=("gpt2", "quickstart"), default=["gpt2", "quickstart"],
        help="gpt2: tokens/s against GPT2LMHeadModel; quickstart: the bare train.py step's FLOP/s against a GEMM",
    )  # fmt: skip
    add_output_argument(parser)
    args = parser.parse_args()
    if "gpt2" in args.sections:
        gpt2_tables(args)
    if "quickstart" in args.sections:
        quickstart_step_rates(args.batches, args.rounds)


def gpt2_tables(args) -> None:
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
