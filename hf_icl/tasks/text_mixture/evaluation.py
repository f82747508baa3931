"""Text-mixture scoring (P3 §4.3): per-token cross-entropy overall, on the first excerpt and after the join.

The unigram baseline predicts every character with its training-split frequency (add-one smoothing), scored on the
same positions, so the model's numbers have a floor to compare with.
"""

from __future__ import annotations

import numpy as np
import torch

from ...evaluation.next_token import next_token_losses
from ..documents import to_alphabet


def _summarise(losses: np.ndarray, cuts: np.ndarray) -> dict:
    """Mean loss per token; `losses[:, p]` is the loss of predicting token p + 1."""
    positions = np.arange(losses.shape[1])[None] + 1  # the token each loss predicts
    first = positions < cuts[:, None]
    return {
        "loss": float(losses.mean()),
        "loss_first_excerpt": float(losses[first].mean()),
        "loss_second_excerpt": float(losses[~first].mean()),
    }


@torch.no_grad()
def evaluate_text_mixture(model, tokenizer, rows, train_rows, batch_size: int = 32) -> dict:
    """The model and the unigram baseline on `rows` (equal-length texts)."""
    ids = torch.tensor(tokenizer([to_alphabet(t) for t in rows["text"]])["input_ids"], dtype=torch.long)
    cuts = np.asarray(rows["cut"])
    counts = np.ones(len(tokenizer))
    for text in train_rows["text"][:2000]:
        counts += np.bincount(tokenizer(to_alphabet(text))["input_ids"], minlength=len(tokenizer))
    unigram = -np.log(counts / counts.sum())[ids[:, 1:].numpy()]
    results = {"baselines": {"unigram": _summarise(unigram, cuts)}}
    if model is not None:
        results["model"] = _summarise(next_token_losses(model, ids, batch_size), cuts)
    return results
