"""ICL-arithmetic scoring (P3 §4.2): next-token accuracy on the answer digits of the last 2 examples of each task.

`digit_hits` compares teacher-forced argmax predictions with the text at every position; `summarise` turns them into
the metric and the accuracy by example index (the in-context learning curve). The least-squares baseline answers each
example from (â, b̂) fitted to the task's earlier examples, scored on the same positions.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from .icl_arithmetic import ICLArithmeticConfig, answer_positions, least_squares_predictions


def encode_texts(tokenizer, texts: list[str]) -> torch.Tensor:
    """(N, T) ids of equal-length texts (one character is one token)."""
    return torch.tensor(tokenizer(list(texts))["input_ids"], dtype=torch.long)


@torch.no_grad()
def digit_hits(logits_of: Callable[[torch.Tensor], torch.Tensor], ids: torch.Tensor, batch_size: int = 64):
    """(N, T) bool: whether argmax of the logits at p − 1 is the token at p (position 0 is False).

    Args:
        logits_of: (B, T) ids -> (B, T, V) logits.
        ids: (N, T).
        batch_size: rows per forward pass.
    """
    hits = torch.zeros(ids.shape, dtype=torch.bool)
    for start in range(0, len(ids), batch_size):
        batch = ids[start : start + batch_size]
        predicted = logits_of(batch).argmax(-1)  # (B, T, V) -> (B, T)
        hits[start : start + batch_size, 1:] = (predicted[:, :-1] == batch[:, 1:]).cpu()
    return hits


def summarise(hits: torch.Tensor | np.ndarray, config: ICLArithmeticConfig) -> tuple[dict, list[float]]:
    """The metric and the accuracy of every example index, from (N, T) hits."""
    hits = np.asarray(hits, dtype=bool)
    metric = {"answer_accuracy": float(hits[:, answer_positions(config)].mean())}
    by_example = [float(hits[:, answer_positions(config, [e])].mean()) for e in range(config.n_ex)]
    return metric, by_example


def least_squares_hits(rows, config: ICLArithmeticConfig) -> np.ndarray:
    """(N, T) hits of the least-squares baseline: its answer characters against the text's."""
    texts = [row["text"] for row in rows]
    guesses = [least_squares_predictions(row, config) for row in rows]
    return np.array([[g == t for g, t in zip(guess, text)] for guess, text in zip(guesses, texts)])


def evaluate_icl_arithmetic(model, tokenizer, rows, config: ICLArithmeticConfig, batch_size: int = 64) -> dict:
    """The model and the least-squares baseline on `rows`.

    Returns:
        `{"model": {"answer_accuracy"}, "baselines": {"least_squares": {...}}, "by_example": {name: [acc per
        example index]}}` (`model` is absent when `model` is `None`).
    """
    results = {"baselines": {}, "by_example": {}}
    if model is not None:
        model.eval()
        device = next(model.parameters()).device
        ids = encode_texts(tokenizer, rows["text"] if hasattr(rows, "column_names") else [r["text"] for r in rows])
        hits = digit_hits(lambda batch: model(batch.to(device), use_cache=False).logits, ids, batch_size)
        results["model"], results["by_example"]["model"] = summarise(hits, config)
    baseline, curve = summarise(least_squares_hits(rows, config), config)
    results["baselines"]["least_squares"] = baseline
    results["by_example"]["least_squares"] = curve
    return results


def plot_accuracy_by_example(results: dict, path, title: str = "") -> None:
    """Answer-digit accuracy against the example index within a task, one line per predictor."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 4))
    for name, curve in results.get("by_example", {}).items():
        ax.plot(range(1, len(curve) + 1), curve, marker="o", label=name)
    ax.set(xlabel="example within the task", ylabel="answer-digit accuracy", title=title or "ICL arithmetic")
    ax.set_ylim(0, 1)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
