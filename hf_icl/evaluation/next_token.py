"""What a causal LM predicts next, position by position: its next-token distributions and its next-token losses.

Shared by the evaluators of the token families (RegBench scores the distributions against the automaton, the text
families average the losses) and by the analyses.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.nn import functional as F


@torch.no_grad()
def model_next_token_probs(model, tokenizer, texts: list[str], batch_size: int = 64) -> list[np.ndarray]:
    """Next-token distributions of `model` at every position of `text[:-1]`, one (len(text) − 1, V) array per text.

    Args:
        model: a causal LM (any hf_icl architecture).
        tokenizer: the task tokenizer (character level).
        texts: raw task strings.
        batch_size: texts per forward pass.
    """
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # length-sorted batches pad little
    probs: list[np.ndarray | None] = [None] * len(texts)
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        encoded = tokenizer([texts[i] for i in chunk], padding=True, padding_side="right", return_tensors="pt")
        ids, mask = encoded["input_ids"].to(device), encoded["attention_mask"].to(device)
        # No cache: a scoring pass (which also lets the right padding take the unmasked paths).
        logits = model(input_ids=ids, attention_mask=mask, use_cache=False).logits  # (B, T, V)
        batch_probs = torch.softmax(logits.double(), dim=-1).cpu().numpy()
        for row, index in enumerate(chunk):
            probs[index] = batch_probs[row, : len(texts[index]) - 1]  # (T − 1, V)
    model.train(was_training)
    return probs


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
        logits = model(batch, use_cache=False).logits[:, :-1].float()  # (B, T−1, V)
        losses.append(F.cross_entropy(logits.transpose(1, 2), batch[:, 1:], reduction="none").cpu())
    return torch.cat(losses).numpy()
