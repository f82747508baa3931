"""RegBench evaluator: scores a model and the in-context n-gram baselines on the same rows (DESIGN §2.3, §5.2)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

from ..baselines.ngram import InContextNGram
from .metrics import regbench_metrics


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
        logits = model(
            input_ids=encoded["input_ids"].to(device), attention_mask=encoded["attention_mask"].to(device)
        ).logits  # (B, T, V)
        batch_probs = torch.softmax(logits.double(), dim=-1).cpu().numpy()
        for row, index in enumerate(chunk):
            probs[index] = batch_probs[row, : len(texts[index]) - 1]  # (T − 1, V)
    model.train(was_training)
    return probs


def evaluate_regbench(
    model,
    tokenizer,
    rows,
    batch_size: int = 64,
    baseline_orders=(1, 2, 3),
    normalized_orders=(3,),
    extra_baselines: Mapping[str, object] | None = None,
) -> dict:
    """Accuracy and TVD of the model and of the in-context n-gram baselines on `rows`.

    Args:
        model: causal LM, or `None` to score baselines only.
        tokenizer: RegBench tokenizer.
        rows: a RegBench split (`datasets.Dataset`) or a list of row dicts.
        batch_size: texts per forward pass.
        baseline_orders: orders of the paper-variant n-gram baseline.
        normalized_orders: orders of the normalised n-gram baseline.
        extra_baselines: further predictors by name (e.g. `BaumWelch()`), each with `predict_proba_batch(texts)`
            or `predict_proba(text)` returning `(len(text) − 1, V)` arrays; scored into `results["baselines"][name]`.

    Returns:
        `{"model": {"accuracy", "tvd"}, "baselines": {"3-gram (paper)": {...}, ...}}`.
    """
    rows = [dict(row) for row in rows]
    texts = [row["text"] for row in rows]
    results: dict = {"num_rows": len(rows), "num_positions": sum(len(t) - 1 for t in texts), "baselines": {}}
    if model is not None:
        results["model"] = regbench_metrics(model_next_token_probs(model, tokenizer, texts, batch_size), rows)
    for variant, orders in (("paper", baseline_orders), ("normalized", normalized_orders)):
        for n in orders:
            baseline = InContextNGram(n, variant=variant)
            probs = [baseline.predict_proba(text) for text in texts]
            results["baselines"][f"{n}-gram ({variant})"] = regbench_metrics(probs, rows)
    for name, baseline in (extra_baselines or {}).items():
        if hasattr(baseline, "predict_proba_batch"):
            probs = baseline.predict_proba_batch(texts)
        else:
            probs = [baseline.predict_proba(text) for text in texts]
        results["baselines"][name] = regbench_metrics(probs, rows)
    return results
