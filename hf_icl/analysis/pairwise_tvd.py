"""Pairwise total variation distance between predictors on RegBench (P1 §5.3, Fig. 5; DESIGN §5.8).

`python -m hf_icl.analysis pairwise-tvd --checkpoint DIR [--checkpoint DIR ...] [--baum-welch] [--lnw DIR ...]`
writes `pairwise_tvd.json` and `pairwise_tvd.png`: the mean TVD between every pair of predictors — the truth
(`next_token_truth`), each model, the in-context n-gram baselines (orders 1–3, paper variant) and, on request,
in-context Baum–Welch and learned n-gram reweighting (LNW) models — over the first `--max-positions` (100)
predictions of each test instance, i.e. after reading text[:1] … text[:100], as the authors' `get_l1_loss(...,
max_len=100)` does. The TVD is `hf_icl.evaluation.metrics.tvd` (½·Σ|p − q|), micro-averaged over all those
positions of all rows, exactly as `regbench_metrics` averages a model against the truth.

Every predictor maps a text to its (T − 1, V) next-token distributions in `REGBENCH_VOCAB` order; since all are
causal, each text is cut to its first `max_positions + 1` tokens before it is scored.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from ..baselines.ngram import InContextNGram
from ..evaluation.metrics import tvd
from ..evaluation.next_token import model_next_token_probs
from ..tasks.regbench import VOCAB_SIZE, next_token_truth
from ..utils.validation import POSITIVE_INT, Limit, check_limits
from . import regbench_common as common

COMMAND = "pairwise-tvd"  # python -m hf_icl.analysis pairwise-tvd
TASK_FAMILY = common.TASK_FAMILY  # the task family whose models it reads (`python -m hf_icl.analysis --help`)
DESCRIPTION = """P1 §5.3 (Fig. 5): mean TVD between every pair of predictors over the first 100 tokens of test rows.

Predictors: the truth, each --checkpoint, the in-context 1/2/3-gram baselines, optionally Baum–Welch and LNWs.
Writes pairwise_tvd.json and pairwise_tvd.png."""


LNW_LABELS = {"counts": "LNW", "frequencies": "LNW_r", "existence": "LNW_b"}
"""The paper's names of the LNW variants (App. D)."""


def pairwise_tvd(predictions: dict[str, Sequence[np.ndarray]], max_positions: int = 100) -> np.ndarray:
    """Mean TVD between every pair of predictors over each row's first `max_positions` positions.

    Args:
        predictions: predictor name -> one (T_r − 1, V) array per row (same rows, same order for all).
        max_positions: positions kept per row.

    Returns:
        (P, P) symmetric matrix in the order of `predictions`, zero on the diagonal.
    """
    names = list(predictions)
    stacked = {
        name: np.concatenate([np.asarray(p, dtype=np.float64)[:max_positions] for p in predictions[name]])
        for name in names
    }  # name -> (N, V)
    matrix = np.zeros((len(names), len(names)))
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            p, q = stacked[names[a]], stacked[names[b]]
            wide, narrow = (p, q) if p.shape[1] >= q.shape[1] else (q, p)  # `tvd` zero-pads its second argument
            matrix[a, b] = matrix[b, a] = tvd(wide, narrow)
    return matrix


def checked(outputs: Sequence[np.ndarray], texts: Sequence[str], name: str) -> list[np.ndarray]:
    """A predictor's outputs, checked to be one (len(text) − 1, ≥ V) array per text."""
    arrays = [np.asarray(probs, dtype=np.float64) for probs in outputs]
    for probs, text in zip(arrays, texts, strict=True):
        if probs.ndim != 2 or probs.shape[0] != len(text) - 1 or probs.shape[1] < VOCAB_SIZE:
            raise ValueError(
                f"predictor {name!r} returned shape {probs.shape} for a text of {len(text)} tokens; "
                f"expected ({len(text) - 1}, >= {VOCAB_SIZE})"
            )
    return arrays


def collect_predictions(rows: list[dict], models: dict, baum_welch: bool, lnw: list, max_positions: int) -> dict:
    """Every predictor's distributions on the rows, cut to their first `max_positions` positions.

    Args:
        rows: RegBench rows.
        models: label -> `(model, tokenizer)`.
        baum_welch: add in-context Baum–Welch (`hf_icl.baselines.baum_welch.BaumWelch`, imported here).
        lnw: LNW folders (`hf_icl.baselines.lnw.LearnedNgramReweighting.from_pretrained`), labelled by variant.
        max_positions: positions kept per row.
    """
    short = [{**row, "text": row["text"][: max_positions + 1]} for row in rows]
    texts = [row["text"] for row in short]
    predictions = {"truth": [next_token_truth(row) for row in short]}
    for label, (model, tokenizer) in models.items():
        predictions[label] = model_next_token_probs(model, tokenizer, texts)
    for n in (1, 2, 3):
        ngram = InContextNGram(n, variant="paper")
        predictions[f"{n}-gram"] = checked([ngram.predict_proba(text) for text in texts], texts, f"{n}-gram")
    if baum_welch:
        from ..baselines.baum_welch import BaumWelch  # imported only when asked for

        fitted = BaumWelch(batch_size=16).predict_proba_batch(texts)  # the paper's 144 states, 10 EM iterations
        predictions["Baum–Welch"] = checked(fitted, texts, "Baum–Welch")
    for folder in lnw:
        from ..baselines.lnw import LearnedNgramReweighting

        reweighting = LearnedNgramReweighting.from_pretrained(folder)
        label = LNW_LABELS.get(reweighting.config.variant, f"LNW ({reweighting.config.variant})")
        label = label if label not in predictions else f"{label} ({Path(folder).name})"
        predictions[label] = checked([reweighting.predict_proba(text) for text in texts], texts, label)
    return predictions


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--checkpoint", required=True, type=Path, action="append", help="RegBench model (repeatable)")
    parser.add_argument("--label", action="append", default=[], help="label of each --checkpoint, in order")
    parser.add_argument("--baum-welch", action="store_true", help="add in-context Baum–Welch (slow: refit per prefix)")
    parser.add_argument("--lnw", type=Path, action="append", default=[], help="LNW folder (repeatable)")
    parser.add_argument("--output", type=Path, help="folder for the JSON and PNG (default: <first run>/analysis)")
    parser.add_argument("--n-rows", type=int, default=500, help="test rows (default: the whole split, 500)")
    parser.add_argument("--max-positions", type=int, default=100, help="first predictions per row (paper: 100)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")


LIMITS = {"n_rows": POSITIVE_INT, "max_positions": POSITIVE_INT, "threads": Limit(int, low=1, high=1024)}
"""The allowed range of every numeric argument."""


def check_arguments(args: argparse.Namespace) -> None:
    """Ranges, labels, checkpoints (one RegBench task), LNW folders and the output folder, before any work."""
    check_limits(args, LIMITS)
    if args.label and len(args.label) != len(args.checkpoint):
        raise ValueError(f"argument --label: {len(args.label)} labels for {len(args.checkpoint)} --checkpoint folders")
    records = [common.training_record(folder) for folder in args.checkpoint]
    # test automata depend on the seed and the sampling options, not on n_train
    settings = {(r.get("task_seed") or 0, str(sorted((r.get("task_options") or {}).items()))) for r in records}
    if len(settings) > 1:
        raise ValueError(
            "argument --checkpoint: the checkpoints were trained on RegBench with different test settings "
            f"(task seed, task options): {sorted(settings)}"
        )
    for folder in args.lnw:
        if not Path(folder).is_dir():
            raise ValueError(f"argument --lnw: {str(folder)!r} is not a folder")
    common.check_output(args.output)


def model_labels(args: argparse.Namespace, models: list) -> list[str]:
    """`--label`s, else each model's architecture name (numbered when two coincide)."""
    labels = list(args.label) or [common.architecture_name(model.config) for model, _ in models]
    return [f"{label} ({i + 1})" if labels.count(label) > 1 else label for i, label in enumerate(labels)]


def run(args: argparse.Namespace) -> dict:
    torch.set_num_threads(args.threads)
    record = common.training_record(args.checkpoint[0])
    loaded = [common.load_checkpoint(folder) for folder in args.checkpoint]
    models = dict(zip(model_labels(args, loaded), loaded))
    rows = common.regbench_rows(record, "test", args.n_rows)
    predictions = collect_predictions(rows, models, args.baum_welch, args.lnw, args.max_positions)
    matrix = pairwise_tvd(predictions, args.max_positions)
    names = list(predictions)
    results = {
        "checkpoints": dict(zip(models, map(str, args.checkpoint))),
        "extra_predictors": {"baum_welch": args.baum_welch, "lnw": [str(folder) for folder in args.lnw]},
        "rows": len(rows),
        "max_positions": args.max_positions,
        "positions": int(sum(min(len(row["text"]) - 1, args.max_positions) for row in rows)),
        "predictors": names,
        "tvd": {a: {b: float(matrix[i, j]) for j, b in enumerate(names)} for i, a in enumerate(names)},
    }
    figure = plot_matrix(matrix, names, len(rows), args.max_positions)
    common.save_results(common.output_folder(args), "pairwise_tvd", results, {"pairwise_tvd.png": figure})
    width = max(map(len, names))
    for i, name in enumerate(names):
        print(f"{name:>{width}} " + " ".join(f"{v:.3f}" for v in matrix[i]))
    return results


def plot_matrix(matrix: np.ndarray, names: list[str], n_rows: int, max_positions: int):
    """Fig. 5 style annotated heatmap."""
    plt = common.pyplot()
    size = 1.6 + 0.75 * len(names)
    fig, ax = plt.subplots(figsize=(size + 1, size))
    image = ax.imshow(matrix, cmap="rocket_r" if "rocket_r" in plt.colormaps() else "magma_r", vmin=0)
    for i in range(len(names)):
        for j in range(len(names)):
            color = "white" if matrix[i, j] > 0.6 * matrix.max() else "black"
            ax.text(j, i, f"{matrix[i, j]:.2f}", ha="center", va="center", fontsize=8, color=color)
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right")
    ax.set_yticks(range(len(names)), names)
    ax.set_title(f"Pairwise TVD, first {max_positions} predictions of {n_rows} test rows")
    fig.colorbar(image, ax=ax, shrink=0.8)
    fig.tight_layout()
    return fig
