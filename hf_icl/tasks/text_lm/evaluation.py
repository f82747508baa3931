"""Text language-modelling scoring (P1 Table 2): perplexity over every predicted position of held-out blocks.

Perplexity is exp of the mean next-token cross-entropy (nats) over all blocks and positions 1 … T − 1 of each block
(position 0 has no context inside its block), the definition P1 reports. The unigram baseline predicts every token
with its training-split frequency (add-one smoothing) on the same positions, so a model's number has a floor.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ...evaluation.next_token import next_token_losses


def summarise(losses: np.ndarray) -> dict:
    """`{"loss": mean cross-entropy, "perplexity": exp(mean)}` over every entry of `losses` (nats)."""
    loss = float(np.mean(losses))
    return {"loss": loss, "perplexity": math.exp(loss)}


def unigram_losses(train_blocks: np.ndarray, blocks: np.ndarray, vocab_size: int) -> np.ndarray:
    """Cross-entropy of the add-one unigram of the training tokens on every predicted position of `blocks`.

    Args:
        train_blocks: (N_train, T) training token ids (all positions counted).
        blocks: (N, T) token ids to score.
        vocab_size: number of token ids.

    Returns:
        (N, T − 1) losses; entry [r, p] is that of `blocks[r, p + 1]`.
    """
    counts = np.bincount(np.asarray(train_blocks).ravel(), minlength=vocab_size) + 1.0
    return -np.log(counts / counts.sum())[np.asarray(blocks)[:, 1:]]


@torch.no_grad()
def evaluate_text_lm(model, blocks, train_blocks, vocab_size: int, batch_size: int = 32) -> dict:
    """The model and the unigram baseline on `blocks`.

    Args:
        model: a causal LM (`None` to score the baseline only).
        blocks: (N, T) token ids of the scored split (list of equal-length lists or an array).
        train_blocks: (N_train, T) training token ids, for the unigram frequencies.
        vocab_size: number of token ids.
        batch_size: blocks per forward pass.

    Returns:
        `{"model": {"loss", "perplexity"}, "baselines": {"unigram": {...}}, "blocks": N, "predicted_tokens": ...}`.

    Raises:
        ValueError: `blocks` is empty (the split holds fewer tokens than one block).
    """
    ids = torch.as_tensor(np.asarray(blocks), dtype=torch.long)
    if ids.ndim != 2 or len(ids) == 0:
        raise ValueError("the scored split holds fewer tokens than one block; lower block_size or add documents")
    results = {
        "baselines": {"unigram": summarise(unigram_losses(train_blocks, ids.numpy(), vocab_size))},
        "blocks": len(ids),
        "predicted_tokens": len(ids) * (ids.shape[1] - 1),
    }
    if model is not None:
        results["model"] = summarise(next_token_losses(model, ids, batch_size))
    return results
