"""Time to quality on RegBench: when does the CPU recipe pass the in-context 2-gram and 3-gram baselines?

    python benchmarks/time_to_quality.py [--config experiments/configs/regbench_cpu.yaml] [--eval-every 100]
        [--threads 2] [--max-steps S] [--seed 0] [--work-dir DIR] [--output FILE]

Trains the recipe with `train.py --eval-every K` (the model scored on RegBench's validation split every K steps,
baselines excluded, the training clocks leaving the evaluation out) and reads the curve back from `metrics.json`. A
milestone is passed at the first evaluation where the model is at least as good as the baseline on the validation
split in both accuracy and TVD; its wall and CPU seconds are the training time up to that step (data generation,
evaluations and the final test are not counted; the whole run's wall time is reported beside). Goals (issue "Time to
quality"): the 2-gram line within 5 minutes of wall time on 2 idle cores, and P1's best Transformer TVD (0.208)
within 30 minutes. The table compares each milestone with its goal: ratio = measured / goal, below 1 is met.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import add_output_argument, run_recorded

ROOT = Path(__file__).resolve().parents[1]
GOALS = {"2-gram (paper)": 300.0, "3-gram (paper)": None}  # wall seconds to reach each baseline (None: no goal)
P1_BEST_TVD = 0.208  # P1's best Transformer at N = 2500 (DESIGN §5.3)
TVD_GOAL_SECONDS = 1800.0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(ROOT / "experiments" / "configs" / "regbench_cpu.yaml"))
    parser.add_argument("--eval-every", type=int, default=100, help="steps between validation scores")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads of the training process")
    parser.add_argument("--max-steps", type=int, help="override the config's steps")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work-dir", help="run folder (default: a temporary one, deleted afterwards)")
    add_output_argument(parser)
    return parser.parse_args()


def first_pass(curve: list[dict], baseline: dict) -> dict | None:
    """The first evaluation at least as good as `baseline` in accuracy and TVD, or `None`."""
    return next((p for p in curve if p["accuracy"] >= baseline["accuracy"] and p["tvd"] <= baseline["tvd"]), None)


def run_training(args, folder: Path) -> tuple[dict, float]:
    command = [sys.executable, str(ROOT / "train.py"), "--config", args.config, "--eval-every", str(args.eval_every),
               "--threads", str(args.threads), "--seed", str(args.seed), "--report-to", "none",
               "--output-dir", str(folder), "--overwrite"]  # fmt: skip
    if args.max_steps:
        command += ["--max-steps", str(args.max_steps)]
    started = time.time()
    subprocess.run(command, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    return json.loads((folder / "metrics.json").read_text()), time.time() - started


def row(*cells) -> str:
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def milestone(name: str, point: dict | None, goal: float | None) -> str:
    if point is None:
        return row(name, "not reached", "", "", goal or "", "")
    ratio = f"{point['train_wall_s'] / goal:.2f}" if goal else ""
    return row(name, point["step"], f"{point['train_wall_s']:.0f}", f"{point['train_cpu_s']:.0f}", goal or "", ratio)


def main() -> None:
    args = parse_args()
    with tempfile.TemporaryDirectory(prefix="time_to_quality.") as scratch:
        folder = Path(args.work_dir) if args.work_dir else Path(scratch) / "run"
        metrics, process_seconds = run_training(args, folder)
    curve, train = metrics["train"]["validation_history"], metrics["train"]
    baselines = metrics["validation"]["baselines"]
    print(f"{Path(args.config).name}: {train['steps']} steps, {metrics['num_parameters']:,} parameters, "
          f"{train['threads']} threads, validation every {args.eval_every} steps; the whole run took "
          f"{process_seconds:.0f} s wall (data generation, evaluations and the final test included)\n")  # fmt: skip
    print(row("milestone (validation split)", "step", "train wall (s)", "train CPU (s)", "goal (s)", "ratio"))
    print(row(*["---"] * 6))
    for name, goal in GOALS.items():
        target = f"{baselines[name]['accuracy']:.4f} / {baselines[name]['tvd']:.4f}"
        print(milestone(f"passes {name} ({target})", first_pass(curve, baselines[name]), goal))
    p1 = next((p for p in curve if p["tvd"] <= P1_BEST_TVD), None)
    print(milestone(f"TVD <= {P1_BEST_TVD} (P1's best Transformer)", p1, TVD_GOAL_SECONDS))
    best = min(curve, key=lambda p: p["tvd"])
    print(milestone(f"best validation TVD {best['tvd']:.4f} (accuracy {best['accuracy']:.4f})", best, None))
    test, test_baselines = metrics["test"]["model"], metrics["test"]["baselines"]
    print(f"\nfinal test: accuracy {test['accuracy']:.4f}, TVD {test['tvd']:.4f}; test baselines: " + ", ".join(
        f"{name} {b['accuracy']:.4f} / {b['tvd']:.4f}" for name, b in test_baselines.items()))  # fmt: skip
    print("\n" + row("step", "train wall (s)", "train CPU (s)", "validation accuracy", "validation TVD"))
    print(row(*["---"] * 5))
    for p in curve:
        print(row(p["step"], f"{p['train_wall_s']:.0f}", f"{p['train_cpu_s']:.0f}", f"{p['accuracy']:.4f}",
                  f"{p['tvd']:.4f}"))  # fmt: skip


if __name__ == "__main__":
    run_recorded(main)
