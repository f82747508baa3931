"""RegBench baselines side by side (P1 §4, Fig. 2; App. C.1–C.4, D; DESIGN §5.3, §5.8).

`python -m hf_icl.analysis regbench-baselines [--checkpoint DIR] [--lnw DIR ...] [--n-train 2500] [--max-rows N]
--output DIR` scores, on the same RegBench test rows and with the same `regbench_metrics` (greedy accuracy, TVD):
an optional trained model, the in-context n-gram baselines (paper variant, orders 1–3, and the normalised 3-gram),
the in-context Baum–Welch HMM (`hf_icl.baselines.BaumWelch`, about 5 CPU minutes for the 500 test rows with numba)
and any learned n-gram reweighting folders (`--lnw`). Writes `metrics.json` (with the scoring time of each predictor)
and `regbench_baselines.png` (accuracy and TVD per predictor).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from ..baselines.baum_welch import BaumWelch
from ..tasks import TaskRequest, check_task_request, task_builder
from ..tasks.regbench.evaluation import evaluate_regbench
from ..utils.atomic_files import atomic_path, write_json_atomic
from ..utils.validation import OPTIONAL_POSITIVE_INT, POSITIVE_INT, SEED, Limit, check_limits, naming
from . import regbench_common as common

COMMAND = "regbench-baselines"  # python -m hf_icl.analysis regbench-baselines
TASK_FAMILY = common.TASK_FAMILY  # the task family whose models it reads (`python -m hf_icl.analysis --help`)
DESCRIPTION = """RegBench test split: a model (optional), the n-gram baselines, Baum–Welch and LNWs, accuracy and TVD.

Writes metrics.json and regbench_baselines.png."""

PAPER_NGRAM = {"1-gram (paper)": (0.472, 0.633), "2-gram (paper)": (0.829, 0.324), "3-gram (paper)": (0.935, 0.255)}
"""(accuracy, TVD) of the reference n-gram baselines on the reference test set (DESIGN §5.3)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--checkpoint", type=Path, help="RegBench model folder (save_pretrained, with tokenizer)")
    parser.add_argument("--lnw", type=Path, action="append", default=[], help="LNW folder (repeatable)")
    parser.add_argument("--output", required=True, type=Path, help="folder for metrics.json and the PNG")
    parser.add_argument("--n-train", type=int, default=2500, help="RegBench config (the test split is shared)")
    parser.add_argument("--max-rows", type=int, help="score only the first N test rows (default: all 500)")
    parser.add_argument("--batch-size", type=int, default=64, help="texts per model forward pass")
    parser.add_argument("--bw-seed", type=int, default=0, help="seed of Baum–Welch's cold start")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")


LIMITS = {
    "n_train": POSITIVE_INT,
    "max_rows": OPTIONAL_POSITIVE_INT,
    "batch_size": POSITIVE_INT,
    "bw_seed": SEED,
    "threads": Limit(int, low=1, high=1024),
}
"""The allowed range of every numeric argument."""


def check_arguments(args: argparse.Namespace) -> None:
    """Every argument before any work: ranges, the RegBench config, the model/LNW folders, the output folder."""
    check_limits(args, LIMITS)
    with naming("--n-train"):
        check_task_request(TaskRequest(common.TASK, args.n_train, 0, {}))
    if args.checkpoint is not None and not (args.checkpoint / "config.json").is_file():
        raise ValueError(
            f"argument --checkpoint: {str(args.checkpoint)!r} has no config.json (a save_pretrained folder)"
        )
    for folder in args.lnw:
        if not folder.is_dir():
            raise ValueError(f"argument --lnw: {str(folder)!r} is not a folder (expected a saved LNW model)")
    if args.output.exists() and not args.output.is_dir():
        raise ValueError(f"argument --output: {str(args.output)!r} is a file, not a folder")


class Timed:
    """Wraps a predictor and records the wall and CPU (this process) seconds its predictions took."""

    def __init__(self, predictor):
        self.predictor, self.seconds, self.cpu_seconds = predictor, 0.0, 0.0

    def predict_proba_batch(self, texts: list[str]) -> list[np.ndarray]:
        wall, cpu = time.perf_counter(), time.process_time()
        if hasattr(self.predictor, "predict_proba_batch"):
            probs = self.predictor.predict_proba_batch(texts)
        else:
            probs = [self.predictor.predict_proba(text) for text in texts]
        self.seconds += time.perf_counter() - wall
        self.cpu_seconds += time.process_time() - cpu
        return probs


def run(args: argparse.Namespace) -> dict:
    torch.set_num_threads(args.threads)
    builder = task_builder(common.TASK, n_train=args.n_train)
    builder.download_and_prepare()
    rows = builder.as_dataset(split="test")
    rows = [dict(row) for row in rows.select(range(min(args.max_rows or len(rows), len(rows))))]
    model = tokenizer = None
    if args.checkpoint is not None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model = AutoModelForCausalLM.from_pretrained(args.checkpoint).eval()
        tokenizer = AutoTokenizer.from_pretrained(args.checkpoint)
    extra = {"Baum–Welch": Timed(BaumWelch(seed=args.bw_seed))}
    if args.lnw:
        from ..baselines.lnw import LearnedNgramReweighting  # written alongside; loaded only when asked for

        for folder in args.lnw:
            extra[f"LNW ({folder.name})"] = Timed(LearnedNgramReweighting.from_pretrained(folder))
    start = time.perf_counter()
    results = evaluate_regbench(model, tokenizer, rows, batch_size=args.batch_size, extra_baselines=extra)
    results.update(
        checkpoint=str(args.checkpoint) if args.checkpoint else None,
        n_train=args.n_train,
        seconds={"total": time.perf_counter() - start} | {name: timed.seconds for name, timed in extra.items()},
        cpu_seconds={name: timed.cpu_seconds for name, timed in extra.items()},
        paper_ngram={name: {"accuracy": a, "tvd": t} for name, (a, t) in PAPER_NGRAM.items()},
    )
    args.output.mkdir(parents=True, exist_ok=True)
    write_json_atomic(args.output / "metrics.json", results)
    plot(args.output / "regbench_baselines.png", results)
    scores = ({"model": results["model"]} if "model" in results else {}) | results["baselines"]
    for name, value in scores.items():
        print(f"{name:>24}: accuracy {value['accuracy']:.4f}  TVD {value['tvd']:.4f}")
    return results


def plot(path: Path, results: dict) -> None:
    """Two bar panels, accuracy and TVD, one bar per predictor."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scores = ({"model": results["model"]} if "model" in results else {}) | results["baselines"]
    names = list(scores)
    fig, axes = plt.subplots(1, 2, figsize=(10, 0.45 * len(names) + 1.5), sharey=True)
    for ax, metric, color in zip(axes, ("accuracy", "tvd"), ("tab:blue", "tab:orange")):
        values = [scores[name][metric] for name in names]
        ax.barh(range(len(names)), values, color=color)
        for i, value in enumerate(values):
            ax.text(value + 0.01, i, f"{value:.3f}", va="center", fontsize=8)
        ax.set(xlim=(0, 1.1), xlabel="greedy accuracy ↑" if metric == "accuracy" else "TVD ↓")
    axes[0].set_yticks(range(len(names)), names, fontsize=8)
    axes[0].invert_yaxis()
    fig.suptitle(f"RegBench test split, {results['num_rows']} rows, {results['num_positions']} positions")
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=100)
    plt.close(fig)
