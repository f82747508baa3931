"""RegBench evaluator: scores a model and the in-context n-gram baselines on the same rows (DESIGN §2.3, §5.2)."""

from __future__ import annotations

from collections.abc import Mapping

from ...baselines.ngram import InContextNGram
from ...evaluation.next_token import model_next_token_probs
from .metrics import metrics_against_truths, row_truths


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
    truths = row_truths(rows)  # (len(text) − 1, V) per row, shared by every predictor below
    if model is not None:
        results["model"] = metrics_against_truths(model_next_token_probs(model, tokenizer, texts, batch_size), truths)
    for variant, orders in (("paper", baseline_orders), ("normalized", normalized_orders)):
        for n in orders:
            baseline = InContextNGram(n, variant=variant)
            probs = [baseline.predict_proba(text) for text in texts]
            results["baselines"][f"{n}-gram ({variant})"] = metrics_against_truths(probs, truths)
    for name, baseline in (extra_baselines or {}).items():
        if hasattr(baseline, "predict_proba_batch"):
            probs = baseline.predict_proba_batch(texts)
        else:
            probs = [baseline.predict_proba(text) for text in texts]
        results["baselines"][name] = metrics_against_truths(probs, truths)
    return results
