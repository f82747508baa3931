"""Text-mixture scoring (P3 §4.3): per-token cross-entropy overall, on the first excerpt and after the join.

The unigram baseline predicts every character with its training-split frequency (add-one smoothing), scored on the
same positions, so the model's numbers have a floor to compare with.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.nn import functional as F

from ..tasks.text_mixture import to_alphabet


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


@torch.no_grad()
def next_token_losses(model, ids: torch.Tensor, batch_size: int = 32) -> np.ndarray:
    """The model's cross-entropy (nats) of every next token: `losses[r, p]` is that of `ids[r, p + 1]`.

    Args:
        model: a causal LM whose output has `.logits` (B, T, V).
        ids: (N, T) token ids, equal-length rows.
        batch_size: rows per forward pass.

    Returns:
        (N, T − 1) float array.
    """
    model.eval()
    device = next(model.parameters()).device
    losses = []
    for start in range(0, len(ids), batch_size):
        batch = ids[start : start + batch_size].to(device)
        logits = model(batch).logits[:, :-1].float()  # (B, T−1, V)
        losses.append(F.cross_entropy(logits.transpose(1, 2), batch[:, 1:], reduction="none").cpu())
    return torch.cat(losses).numpy()
