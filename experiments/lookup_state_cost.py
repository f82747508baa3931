"""The CPU cost of a training step of Mamba's suffix-key lookup recipe at a larger state, relative to the recipe's own
state, measured side by side (experiments/sweeps/lookup_mamba_suffix_search.yaml: its state-64 point trains the most
steps that fit 1,800 CPU s at its own cost per step, and this ratio carries the recipe's measured cost to it).

Run: `OMP_NUM_THREADS=1 python experiments/lookup_state_cost.py --output PATH.json`. A step is forward, backward and
an AdamW update on one batch at the recipe's shape (experiments/configs/lookup_cpu.yaml: the tiny Mamba, batch 16,
220-token packed contexts); both models are timed in one process, interleaved in rounds, in process CPU time. The
ratio is the median of the per-round ratios (larger state / recipe state), so the drift of a shared machine cancels.
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
from hf_icl.training.provenance import machine_facts
from hf_icl.utils.atomic_files import write_json_atomic

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from common import interleaved_cpu_times, median_ratio  # noqa: E402
from transformer_vs_gpt2 import training_step  # noqa: E402


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--states", type=int, nargs=2, default=[16, 64], metavar=("RECIPE", "LARGER"))
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--length", type=int, default=220)
    parser.add_argument("--vocab", type=int, default=64, help="token ids drawn uniformly (cost hardly depends on it)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--output", required=True)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    batch = torch.randint(0, args.vocab, (args.batch, args.length))  # (B, T)
    steps = {}
    for state in args.states:
        config = hf_icl.config_for("mamba", "tiny", vocab_size=args.vocab, ssm_state_size=state)
        model = AutoModelForCausalLM.from_config(config).train()
        steps[state] = training_step(model, torch.optim.AdamW(model.parameters(), lr=1e-3), batch)
    times = interleaved_cpu_times(steps, args.rounds, args.repeats)
    recipe, larger = args.states
    ratios = [a / b for a, b in zip(times[larger], times[recipe], strict=True)]
    result = {
        "what": "Mamba (tiny) training step at the lookup recipe's shape, larger state against the recipe's",
        "batch": args.batch, "length": args.length, "threads": 1, "clock": "process CPU time",
        "cpu_s_per_step": {f"state{s}": statistics.median(times[s]) for s in args.states},
        "ratio": median_ratio(times[larger], times[recipe]), "round_ratios": ratios,
        "machine": machine_facts(),
    }  # fmt: skip
    write_json_atomic(args.output, result)
    print(json.dumps({k: v for k, v in result.items() if k != "machine"}, indent=2))


if __name__ == "__main__":
    main()
