"""Slow/fast Transformer analyses on ICL arithmetic (P3 §4.2, Figs. 3–4, 7; issue #13).

`python -m hf_icl.analysis slowfast --checkpoint DIR [--baseline DIR] --output DIR` writes `slowfast_analysis.json`
and three PNGs:

- `slow_feature_fit.png`: a linear fit of each task's (a, b) from ⟨y⟩, y^ℓ averaged over 4 tokens at a random
  position in the task's last two examples (P3 Fig. 4); R² on held-out records (fit on the first half of the rows);
- `slow_feature_blocks.png`: n_i·n_j with n = y^ℓ/‖y^ℓ‖ across one sequence and averaged over sequences (Fig. 3);
- `specialization_accuracy.png`: answer-digit accuracy of the y-model, the folded specialised model, the
  frozen-y forward and the baseline, side by side (§4.2).

Specialisation (P3 §4.2's first setup, Fig. 6a): for every task of a test sequence, y^ℓ is read from the y-model's
full pass at the `|` closing the task's first n_ex − 2 examples; `model.specialize(y)` folds it into a plain
`icl_transformer`, which then reads the task's own text (earlier examples in context) and is scored on its last two
answers. The same segments are scored by the y-model with its own dynamic y, by the frozen-y forward
`model(ids, slow_features=y)` and by the baseline, so every "segment" number shares one context.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from ..tasks import FAMILIES, task_builder
from ..tasks.icl_arithmetic import ICLArithmeticConfig
from ..tasks.icl_arithmetic.evaluation import digit_hits, encode_texts, least_squares_hits, summarise
from ..utils.validation import POSITIVE_INT, SEED, Limit, check_limits, check_output_folder

COMMAND = "slowfast"  # python -m hf_icl.analysis slowfast
TASK_FAMILY = "icl_arithmetic"  # the task family whose models it reads (`python -m hf_icl.analysis --help`)
(TASK,) = FAMILIES[TASK_FAMILY].tasks  # its one task: the rows the analysis rebuilds
DESCRIPTION = """P3 slow/fast analyses on ICL arithmetic: (a, b) from ⟨y⟩ with R², n_i·n_j blocks, specialised accuracy.

Writes slowfast_analysis.json, slow_feature_fit.png, slow_feature_blocks.png and specialization_accuracy.png."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--checkpoint", required=True, type=Path, help="slow/fast model folder (save_pretrained)")
    parser.add_argument("--baseline", type=Path, help="x-only baseline model folder, scored on the same rows")
    parser.add_argument("--output", required=True, type=Path, help="folder for the JSON and PNGs")
    parser.add_argument("--n-rows", type=int, default=500, help="test sequences (default 500)")
    parser.add_argument("--n-folded", type=int, default=100, help="sequences whose tasks are folded one by one")
    parser.add_argument("--seed", type=int, default=0, help="seed of the ⟨y⟩ positions")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")


def task_config(model, n_rows: int) -> tuple[ICLArithmeticConfig, list[dict]]:
    """The checkpoint's ICL-arithmetic layout (from its training record) and `n_rows` test rows."""
    run = getattr(model.config, "hf_icl_run", None) or {}
    options = {k: v for k, v in (run.get("task_options") or {}).items() if k in ("n_tasks", "n_ex", "digits")}
    # every split must be non-empty; only the test rows are read
    overrides = dict(n_train=0, n_validation=1, n_test=n_rows, seed=run.get("task_seed", 0), **options)
    builder = task_builder(TASK, **overrides)
    builder.download_and_prepare()
    rows = list(builder.as_dataset(split="test"))
    return ICLArithmeticConfig(name="analysis", **options), rows


def r_squared(truth: np.ndarray, predicted: np.ndarray) -> float:
    return float(1 - ((truth - predicted) ** 2).sum() / ((truth - truth.mean()) ** 2).sum())


def fit_task_parameters(slow: np.ndarray, rows: list[dict], config: ICLArithmeticConfig, seed: int) -> dict:
    """Least-squares fit of (a, b) from ⟨y⟩ per task; R² on the held-out half of the rows (and in-sample)."""
    rng = np.random.default_rng(seed)
    task_length = config.n_ex * config.example_length + 1
    features, targets = [], []
    for row, y in zip(rows, slow):
        for t in range(config.n_tasks):
            first = t * task_length + (config.n_ex - 2) * config.example_length
            start = int(rng.integers(first, (t + 1) * task_length - 4))
            features.append(y[start : start + 4].mean(0))
            targets.append([row["a"][t], row["b"][t]])
    design = np.concatenate([np.array(features), np.ones((len(features), 1))], axis=1)  # (N·tasks, d_y + 1)
    targets = np.array(targets)
    half = (len(rows) // 2) * config.n_tasks
    weights = np.linalg.lstsq(design[:half], targets[:half], rcond=None)[0]
    held_out, in_sample = design[half:] @ weights, design[:half] @ weights
    return {
        "records": len(targets),
        "r2_a": r_squared(targets[half:, 0], held_out[:, 0]),
        "r2_b": r_squared(targets[half:, 1], held_out[:, 1]),
        "r2_a_in_sample": r_squared(targets[:half, 0], in_sample[:, 0]),
        "r2_b_in_sample": r_squared(targets[:half, 1], in_sample[:, 1]),
        "_points": (targets[half:], held_out),
    }


def task_segments(ids: torch.Tensor, slow: torch.Tensor, config: ICLArithmeticConfig):
    """Each task's own ids (N·tasks, task_length) and y^ℓ at the `|` closing its first n_ex − 2 examples."""
    task_length = config.n_ex * config.example_length + 1
    segments = ids[:, : config.n_tasks * task_length].reshape(-1, task_length)
    at = [t * task_length + (config.n_ex - 2) * config.example_length - 1 for t in range(config.n_tasks)]
    return segments, slow[:, at].reshape(-1, slow.shape[-1])


@torch.no_grad()
def specialised_hits(model, segments, frozen, count: int) -> tuple[torch.Tensor, float]:
    """Hits of `count` folded models (one per segment) and the largest |folded − frozen-y| logit difference."""
    hits, largest = torch.zeros(count, segments.shape[1], dtype=torch.bool), 0.0
    for i in range(count):
        specialised = model.specialize(frozen[i])
        folded = specialised(segments[i : i + 1]).logits
        reference = model(segments[i : i + 1], slow_features=frozen[i]).logits
        largest = max(largest, float((folded - reference).abs().max()))
        hits[i, 1:] = folded[0, :-1].argmax(-1) == segments[i, 1:]
    return hits, largest


LIMITS = {
    "n_rows": POSITIVE_INT,
    "n_folded": POSITIVE_INT,
    "seed": SEED,
    "threads": Limit(int, low=1, high=1024),
}
"""The allowed range of every numeric argument."""


def check_arguments(args: argparse.Namespace) -> None:
    """Every argument before any model is loaded: the ranges, the model folders and the output folder."""
    check_limits(args, LIMITS)
    for flag, folder in (("--checkpoint", args.checkpoint), ("--baseline", args.baseline)):
        if folder is not None and not (folder / "config.json").is_file():
            raise ValueError(f"argument {flag}: {str(folder)!r} has no config.json (expected a save_pretrained folder)")
    check_output_folder(args.output, "--output")


def run(args: argparse.Namespace) -> dict:
    torch.set_num_threads(args.threads)
    model = AutoModelForCausalLM.from_pretrained(args.checkpoint).eval()
    tokenizer = AutoTokenizer.from_pretrained(args.checkpoint)
    config, rows = task_config(model, args.n_rows)
    ids = encode_texts(tokenizer, [row["text"] for row in rows])
    slow = torch.cat([model.model.compute_slow_features(ids[i : i + 64]) for i in range(0, len(ids), 64)])
    fit = fit_task_parameters(slow.numpy(), rows, config, args.seed)
    points = fit.pop("_points")

    segment_config = dataclasses.replace(config, n_tasks=1)
    segments, frozen = task_segments(ids, slow, config)
    accuracy = {}
    accuracy["y-model (full sequence)"] = summarise(digit_hits(lambda b: model(b).logits, ids), config)[0]
    accuracy["least squares"] = summarise(least_squares_hits(rows, config), config)[0]
    accuracy["y-model (segment, own y)"] = summarise(digit_hits(lambda b: model(b).logits, segments), segment_config)[0]
    frozen_hits = torch.cat(
        [
            digit_hits(lambda b, f=frozen[i : i + 64]: model(b, slow_features=f).logits, segments[i : i + 64])
            for i in range(0, len(segments), 64)
        ]
    )
    accuracy["frozen y (segment)"] = summarise(frozen_hits, segment_config)[0]
    count = min(args.n_folded, len(rows)) * config.n_tasks
    folded_hits, largest = specialised_hits(model, segments, frozen, count)
    accuracy["specialised, folded (segment)"] = summarise(folded_hits, segment_config)[0]
    accuracy["frozen y, same segments as folded"] = summarise(frozen_hits[:count], segment_config)[0]
    if args.baseline is not None:
        baseline = AutoModelForCausalLM.from_pretrained(args.baseline).eval()
        accuracy["baseline (full sequence)"] = summarise(digit_hits(lambda b: baseline(b).logits, ids), config)[0]
        accuracy["baseline (segment)"] = summarise(digit_hits(lambda b: baseline(b).logits, segments), segment_config)[
            0
        ]
    results = {
        "checkpoint": str(args.checkpoint),
        "baseline": str(args.baseline) if args.baseline else None,
        "rows": len(rows),
        "folded_segments": count,
        "folded_max_abs_logit_difference": largest,
        "task": {"n_tasks": config.n_tasks, "n_ex": config.n_ex, "digits": config.digits},
        "parameters": {"y-model": model.num_parameters()}
        | ({"baseline": baseline.num_parameters()} if args.baseline else {}),
        "fit": fit,
        "answer_accuracy": {name: value["answer_accuracy"] for name, value in accuracy.items()},
    }
    args.output.mkdir(parents=True, exist_ok=True)
    (args.output / "slowfast_analysis.json").write_text(json.dumps(results, indent=2) + "\n")
    plot_all(args.output, points, fit, slow.numpy(), config, results["answer_accuracy"])
    print(json.dumps({k: results[k] for k in ("fit", "answer_accuracy", "folded_max_abs_logit_difference")}, indent=2))
    return results


def plot_all(output: Path, points, fit: dict, slow: np.ndarray, config: ICLArithmeticConfig, accuracy: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    truth, predicted = points
    fig, axes = plt.subplots(1, 2, figsize=(9, 4))
    for k, (ax, name) in enumerate(zip(axes, "ab")):
        ax.scatter(truth[:, k], predicted[:, k], s=6, alpha=0.5)
        lo, hi = truth[:, k].min(), truth[:, k].max()
        ax.plot([lo, hi], [lo, hi], color="black", linewidth=1)
        ax.set(xlabel=f"true {name}", ylabel=f"{name} from ⟨y⟩", title=f"{name}: held-out R² = {fit[f'r2_{name}']:.3f}")
    fig.tight_layout()
    fig.savefig(output / "slow_feature_fit.png", dpi=100)
    plt.close(fig)

    normalised = slow / np.maximum(np.linalg.norm(slow, axis=-1, keepdims=True), 1e-6)  # (N, T, d_y)
    single = normalised[0] @ normalised[0].T
    mean = np.einsum("nid,njd->ij", normalised, normalised) / len(normalised)
    task_length = config.n_ex * config.example_length + 1
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.6))
    for ax, matrix, title in zip(axes, (single, mean), ("one sequence", f"mean over {len(slow)} sequences")):
        image = ax.imshow(matrix, cmap="viridis", vmin=-1, vmax=1)
        for t in range(1, config.n_tasks):
            ax.axhline(t * task_length - 0.5, color="white", linewidth=0.6)
            ax.axvline(t * task_length - 0.5, color="white", linewidth=0.6)
        ax.set(title=f"n_i · n_j, {title}", xlabel="position j", ylabel="position i")
    fig.colorbar(image, ax=axes, shrink=0.8)
    fig.savefig(output / "slow_feature_blocks.png", dpi=100)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(8, 4))
    names = list(accuracy)
    ax.barh(range(len(names)), [accuracy[n] for n in names], color="tab:blue")
    for i, name in enumerate(names):
        ax.text(accuracy[name] + 0.005, i, f"{accuracy[name]:.3f}", va="center", fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.invert_yaxis()
    ax.set(xlim=(0, 1), xlabel="answer-digit accuracy, last 2 examples of each task")
    fig.tight_layout()
    fig.savefig(output / "specialization_accuracy.png", dpi=100)
    plt.close(fig)
