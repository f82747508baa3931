"""`icl_mamba` training step against transformers' `MambaForCausalLM` (its CPU path) and `icl_transformer`.

Run: `OMP_NUM_THREADS=1 python benchmarks/mamba_training_step.py [--preset small --batch 8 --length 384]`.
Targets: ≥ 50× faster than `MambaForCausalLM` (issue #3); ≤ 1.2× the time of `icl_transformer` of the same
preset (issue #16; issue #3 asked ≤ 3×).

`MambaForCausalLM` is built at exactly our size: same width, number of Mamba blocks, state size N, expand, conv
kernel, Δ rank, vocabulary 20, RMSNorm (our `mamba` is run with `norm="rmsnorm"` so the parameter counts are equal),
tied embeddings. A step is forward + backward + AdamW update. transformers' CPU path runs its sequential scan (about
a minute or more per step at T = 384), so it is timed once, after a warm-up step at T = 32; ours and the
Transformer take the median of several steps, interleaved in rounds; times are each side's median round and the
ratio is the median of the per-round ratios. Times are process CPU time
by default (load from other processes on a shared machine disturbs them far less than wall time; `--clock wall`).
`--skip-hf` leaves out the minutes-long `MambaForCausalLM` step.

`icl_mamba` is timed with each CPU selective scan (`HF_ICL_SCAN_BACKEND`): the compiled numba scan (the default
when numba is installed) and the chunked torch scan, each against `icl_transformer`; the first table rows use the
default backend.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # transformers may otherwise look for hub kernels

import torch  # noqa: E402
from common import (  # noqa: E402
    add_output_argument,
    median_ratio,
    median_time,
    print_table,
    run_recorded,
    with_scan_backend,
)
from transformer_vs_gpt2 import training_step  # noqa: E402
from transformers import AutoModelForCausalLM, MambaConfig, MambaForCausalLM  # noqa: E402

import hf_icl  # noqa: E402
from hf_icl.mixers.ops import selective_scan as scan_module  # noqa: E402


def build_models(preset: str, vocab: int):
    config = hf_icl.config_for("mamba", preset, vocab_size=vocab, norm="rmsnorm")
    torch.manual_seed(0)
    ours = AutoModelForCausalLM.from_config(config)
    reference_config = MambaConfig(
        vocab_size=vocab,
        hidden_size=config.hidden_size,
        num_hidden_layers=config.num_hidden_layers,
        state_size=config.ssm_state_size,
        expand=config.expand,
        conv_kernel=config.conv_kernel,
        time_step_rank=config.dt_rank,
        use_bias=False,
        use_conv_bias=True,
        layer_norm_epsilon=config.layer_norm_epsilon,
        tie_word_embeddings=True,
        use_cache=False,
        pad_token_id=0,
        bos_token_id=0,
        eos_token_id=0,
    )
    reference = MambaForCausalLM(reference_config)
    transformer = AutoModelForCausalLM.from_config(
        hf_icl.config_for("transformer", preset, vocab_size=vocab), attn_implementation="sdpa"
    )
    return ours, reference, transformer


def timed(step, repeats, clock):
    """Median time of `step` after one warm-up call, by process CPU time or wall time."""
    return median_time(step, repeats=repeats, warmup=1, clock=clock)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--preset", default="small")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--length", type=int, default=384)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; the median per-round ratio counts")
    parser.add_argument("--clock", choices=("process", "wall"), default="process")
    parser.add_argument("--skip-hf", action="store_true")
    add_output_argument(parser)
    args = parser.parse_args()
    ours, reference, transformer = build_models(args.preset, vocab=20)
    counts = {name: m.num_parameters() for name, m in (("ours", ours), ("hf", reference), ("tf", transformer))}
    assert counts["ours"] == counts["hf"], counts
    input_ids = torch.randint(1, 20, (args.batch, args.length))
    models = {"ours": ours, "transformer": transformer, "hf": reference}
    optimizers = {name: torch.optim.AdamW(model.parameters(), lr=1e-4) for name, model in models.items()}
    train = {name: training_step(models[name].train(), optimizers[name], input_ids) for name in ("ours", "transformer")}
    backends = ["torch"] if scan_module.NumbaSelectiveScan is None else ["numba", "torch"]
    default = backends[0]  # what `HF_ICL_SCAN_BACKEND=auto` takes here
    steps = {f"ours/{backend}": with_scan_backend(train["ours"], backend) for backend in backends}
    steps["transformer"] = train["transformer"]
    times = {name: [] for name in steps}
    for _ in range(args.rounds):  # interleave rounds so drift in machine speed hits both alike
        for name, step in steps.items():
            times[name].append(timed(step, args.repeats, args.clock))
    seconds = {name: statistics.median(values) for name, values in times.items()}  # each side's median round
    seconds["ours"] = seconds[f"ours/{default}"]
    ratio = {name: median_ratio(times[name], times["transformer"]) for name in steps}  # per-round ratios' median

    seconds["hf"] = float("nan")
    if not args.skip_hf:
        training_step(reference.train(), optimizers["hf"], input_ids[:, :32])()  # warm-up at a short length
        clock = time.process_time if args.clock == "process" else time.perf_counter
        start = clock()
        training_step(reference, optimizers["hf"], input_ids)()
        seconds["hf"] = clock() - start

    tokens = args.batch * args.length
    print(
        f"threads={torch.get_num_threads()} {args.clock} time, preset={args.preset} "
        f"blocks={ours.config.num_hidden_layers} d={ours.config.hidden_size} batch={args.batch} T={args.length} "
        f"params: mamba={counts['ours']:,} MambaForCausalLM={counts['hf']:,} icl_transformer={counts['tf']:,}"
    )
    print(
        f"tokens/s: icl_mamba {tokens / seconds['ours']:,.0f}, MambaForCausalLM {tokens / seconds['hf']:,.0f}, "
        f"icl_transformer {tokens / seconds['transformer']:,.0f}; speed-up over MambaForCausalLM "
        f"{seconds['hf'] / seconds['ours']:.0f}× (target ≥ 50×)\n"
    )
    case = f"training step, {args.preset}, B={args.batch}, T={args.length}"
    if not args.skip_hf:
        print_table([(case, seconds["ours"], seconds["hf"])], ours="icl_mamba", reference="MambaForCausalLM")
        print()
    ours_row = (case, seconds["ours"], seconds["transformer"], ratio[f"ours/{default}"])
    print_table([ours_row], ours="icl_mamba", reference="icl_transformer")
    print(f"\nicl_mamba by CPU selective scan ({scan_module.SCAN_BACKEND_ENV}; default here: {default}):")
    rows = [(f"{case}, {backend} scan", seconds[f"ours/{backend}"], seconds["transformer"], ratio[f"ours/{backend}"])
            for backend in backends]  # fmt: skip
    print_table(rows, ours="icl_mamba", reference="icl_transformer")


if __name__ == "__main__":
    run_recorded(main)
