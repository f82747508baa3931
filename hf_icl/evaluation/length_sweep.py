"""Length generalization (paper 2, §5.1): accuracy of the answer read at the query position, per input length.

Rows are formal-language examples with `input` (symbols), `answer` (one token) and `length`. The model reads
`input + "?"` and its argmax at the query position is compared with the answer. All rows of one length are
batched together, so no padding (and no padding-dependent behaviour) enters the score.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import torch

QUERY_TOKEN = "?"


@torch.no_grad()
def query_accuracy_by_length(model, tokenizer, rows, batch_size: int = 128) -> dict[int, float]:
    """Accuracy of the argmax at the query position, grouped by input length.

    Args:
        model: a causal LM trained on `input ? answer` sequences.
        tokenizer: the task tokenizer.
        rows: iterable of dicts with `input`, `answer` and `length`.
        batch_size: rows per forward pass.

    Returns:
        `{length: accuracy}` sorted by length.
    """
    by_length: dict[int, list[dict]] = defaultdict(list)
    for row in rows:
        by_length[int(row["length"])].append(row)
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    accuracy = {}
    for length in sorted(by_length):
        group, correct = by_length[length], 0
        for start in range(0, len(group), batch_size):
            chunk = group[start : start + batch_size]
            ids = tokenizer([row["input"] + QUERY_TOKEN for row in chunk], return_tensors="pt")["input_ids"]
            answers = torch.tensor(tokenizer.convert_tokens_to_ids([row["answer"] for row in chunk]))
            logits = model(input_ids=ids.to(device)).logits[:, -1]  # (B, V) at the query position
            correct += int((logits.argmax(-1).cpu() == answers).sum())
        accuracy[length] = correct / len(group)
    model.train(was_training)
    return accuracy


def length_sweep(model, tokenizer, rows, train_max_length: int, batch_size: int = 128) -> dict:
    """Per-length accuracy plus its mean over all lengths beyond `train_max_length` (the P2 Table 1 number).

    Returns:
        `{"model": {"accuracy": mean over test lengths, "accuracy_in_train_range": ...}, "per_length": {...},
        "train_max_length": ...}`; a mean is left out where `rows` hold no length on its side (a validation split
        of training lengths has no `accuracy`, rather than a NaN one).
    """
    per_length = query_accuracy_by_length(model, tokenizer, rows, batch_size)
    beyond = [acc for length, acc in per_length.items() if length > train_max_length]
    within = [acc for length, acc in per_length.items() if length <= train_max_length]
    summary = {}
    if beyond:
        summary["accuracy"] = float(np.mean(beyond))
    if within:
        summary["accuracy_in_train_range"] = float(np.mean(within))
    return {
        "model": summary,
        "per_length": {str(length): acc for length, acc in per_length.items()},
        "train_max_length": train_max_length,
        "num_rows": sum(1 for _ in rows),
    }


def binned_curve(per_length: dict, bin_width: int = 1) -> tuple[list[float], list[float]]:
    """Lengths and accuracies sorted by length (JSON keys are strings), averaged over bins of `bin_width`."""
    points = sorted((int(length), acc) for length, acc in per_length.items())
    bins: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for length, acc in points:
        bins[(length - points[0][0]) // bin_width].append((length, acc))
    centers = [float(np.mean([p[0] for p in group])) for _, group in sorted(bins.items())]
    return centers, [float(np.mean([p[1] for p in group])) for _, group in sorted(bins.items())]


def draw_length_curve(ax, results: dict, title: str = "", label: str | None = None, bin_width: int = 1) -> None:
    """Accuracy against input length on `ax` (optionally averaged over length bins), training length marked."""
    lengths, accuracy = binned_curve(results["per_length"], bin_width)
    ax.plot(lengths, accuracy, marker="." if bin_width == 1 else None, lw=1, label=label)
    ax.axvline(results["train_max_length"], color="tab:red", ls="--", lw=1, label="longest training length")
    ax.set(xlabel="input length", ylabel="accuracy", ylim=(-0.02, 1.02), title=title)
    ax.legend()


def plot_length_curve(results: dict, path: str | Path, title: str = "") -> None:
    """PNG of accuracy against input length with the longest training length marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    draw_length_curve(ax, results, title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
