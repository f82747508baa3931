"""The CPU cost of an n-gram-head row's training step against its base model's, measured side by side (issue 50).

A fair-zoo n-gram-head row (`experiments/configs/regbench_zoo/<architecture>_ngh123.yaml`) trains the most steps that
fit 1,800 CPU s at its own cost per step (`experiments/zoo_configs.py --ngram-heads-cost ARCH=S`,
`experiments/sweeps/regbench_zoo_search/common.yaml`). The heads add a different share to each base (13 % to the
Transformer's step, 27 % to RetNet's, from their committed runs), and a step's absolute cost drifts by a fifth with the
host's load, so the row's cost is carried from its base's search trial by a ratio measured here:

    OMP_NUM_THREADS=1 python experiments/ngram_heads_cost.py experiments/configs/regbench_zoo/gla_ngh123.yaml \
        --base-cost 0.71 --output docs/results/regbench_zoo_search/gla/ngram_heads_cost.json

`CONFIG` is the row's `train.py --config` file; the base is the same model without `ngram_heads`. A step is forward,
backward and an AdamW update on the config's first training batch, built by its task as `train.py` builds it (real
tokens and padding, not random ids). Both models are timed in one process, interleaved in rounds, in process CPU
time; the ratio is the median of the per-round ratios (with heads / without), so the drift of a shared machine
cancels. With `--base-cost` (the base trial's CPU s per step, from its config's header) the row's cost, base cost ×
ratio, is printed: the value of the `--ngram-heads-cost` item to pass to zoo_configs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM

import hf_icl
from hf_icl.tasks import family_of
from hf_icl.training.arguments import parse_args
from hf_icl.training.provenance import machine_facts
from hf_icl.training.shared_overrides import with_shared_overrides
from hf_icl.utils.atomic_files import write_json_atomic

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from common import interleaved_cpu_times, median_ratio  # noqa: E402

NGRAM_HEADS = "ngram_heads"


def real_batch_and_configs(config_file: str):
    """The config's first training batch (as its collate builds it) and `{"with heads": config, "base": config}`: the
    row's model as `train.py --config` builds it, and the same without heads."""
    args = with_shared_overrides(parse_args(["--config", config_file]))
    if NGRAM_HEADS not in args.overrides:
        raise ValueError(f"{config_file}: overrides has no {NGRAM_HEADS!r}; pass an n-gram-head row's config")
    data = family_of(args.task).prepare_data(args.task_request())
    batch = data.collate([data.train[i] for i in range(args.batch_size)])  # {input_ids: (B, T), ...}
    base = {k: v for k, v in args.overrides.items() if k != NGRAM_HEADS}
    configs = {label: hf_icl.config_for(args.architecture, args.preset, **data.model_fields, **overrides)
               for label, overrides in (("with heads", args.overrides), ("base", base))}  # fmt: skip
    return args, batch, configs


def training_step(model, optimizer, batch):
    def step():
        model(**batch).loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", help="the n-gram-head row's train.py --config file")
    parser.add_argument("--base-cost", type=float, help="the base trial's CPU s per step (its config's header)")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", required=True)
    args = parser.parse_args(argv)
    if args.base_cost is not None and not args.base_cost > 0:
        parser.error(f"argument --base-cost: {args.base_cost} is not a positive number of CPU seconds")
    run, batch, configs = real_batch_and_configs(args.config)  # bad config input fails here, before any timing
    torch.set_num_threads(1)
    torch.manual_seed(0)
    steps = {}
    for label, config in configs.items():
        model = AutoModelForCausalLM.from_config(config).train()
        steps[label] = training_step(model, torch.optim.AdamW(model.parameters(), lr=1e-3), batch)
    times = interleaved_cpu_times(steps, args.rounds, args.repeats)
    ratio = median_ratio(times["with heads"], times["base"])
    result = {
        "what": f"training step of {args.config} against the same model without n-gram heads",
        "architecture": run.architecture, "batch_shape": list(batch["input_ids"].shape), "threads": 1,
        "clock": "process CPU time",
        "cpu_s_per_step": {label: statistics.median(values) for label, values in times.items()},
        "ratio": ratio,
        "round_ratios": [a / b for a, b in zip(times["with heads"], times["base"], strict=True)],
        "base_trial_cpu_s_per_step": args.base_cost,
        "row_cpu_s_per_step": None if args.base_cost is None else round(args.base_cost * ratio, 3),
        "machine": machine_facts(),
    }  # fmt: skip
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(args.output, result)
    print(json.dumps({k: v for k, v in result.items() if k != "machine"}, indent=2))


if __name__ == "__main__":
    main()
