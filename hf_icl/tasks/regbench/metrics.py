"""RegBench's metric (P1 §4 eq. 8-9; DESIGN §5.2): accuracy and TVD of next-token distributions against the exact
truth of each row's automaton, micro-averaged over every position of every row.

``hf_icl.evaluation.regbench_metrics`` (a stable name) is this function.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ...evaluation.metrics import accuracy, tvd
from .regbench import VOCAB_SIZE, next_token_truth

ROW_KEYS = ("text", "start_state", "transitions")


def regbench_metrics(probs: Sequence[np.ndarray], rows: Sequence[Mapping]) -> dict[str, float]:
    """Micro-averaged accuracy and TVD over all positions of all RegBench rows.

    Args:
        probs: one ``(len(text) - 1, V_model)`` array per row.
        rows: RegBench rows (``text``, ``start_state``, ``transitions``), same order as ``probs``.

    Returns:
        ``{"accuracy": float, "tvd": float}``.

    Raises:
        TypeError: `probs` or `rows` is not a sequence, or a row is not a mapping.
        ValueError: naming the argument: no rows, lengths that differ, a row that is not a RegBench row, or an array
            of `probs` whose shape does not fit its row.
    """
    for name, value in (("probs", probs), ("rows", rows)):
        if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__len__"):
            raise TypeError(f"{name} is a {type(value).__name__}, expected a sequence (one entry per row)")
    if len(probs) != len(rows):
        raise ValueError(f"len(probs)={len(probs)} does not match len(rows)={len(rows)}")
    if not len(rows):
        raise ValueError("rows is empty: the metric needs at least one row (it is undefined over no positions)")
    return metrics_against_truths(probs, row_truths(rows))


def row_truths(rows: Sequence[Mapping]) -> list[np.ndarray]:
    """The exact next-token distributions of every row (`next_token_truth`), a malformed row named as `rows[i]`.

    An evaluator that scores several predictors on the same rows computes these once and calls
    `metrics_against_truths` for each.
    """
    return [_truth_of(i, row) for i, row in enumerate(rows)]


def metrics_against_truths(probs: Sequence[np.ndarray], truths: Sequence[np.ndarray]) -> dict[str, float]:
    """`regbench_metrics` with the rows' truths given (`row_truths(rows)`), so they are not rebuilt per predictor."""
    if len(probs) != len(truths):
        raise ValueError(f"len(probs)={len(probs)} does not match len(rows)={len(truths)}")
    p = []
    for i, (x, truth) in enumerate(zip(probs, truths)):
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[0] != truth.shape[0] or x.shape[1] < VOCAB_SIZE:
            raise ValueError(
                f"probs[{i}] has shape {x.shape}, expected ({truth.shape[0]}, V) with V >= {VOCAB_SIZE} for rows[{i}] "
                "(one distribution per position but the last)"
            )
        p.append(x)
    if not sum(len(t) for t in truths):
        raise ValueError("rows hold no position to score (every text has one character)")
    p, q = np.concatenate(p), np.concatenate(truths)
    return {"accuracy": accuracy(p, q), "tvd": tvd(p, q)}


def _truth_of(i: int, row) -> np.ndarray:
    """`next_token_truth(row)`, with a malformed row named as `rows[i]`."""
    if not isinstance(row, Mapping):
        raise TypeError(f"rows[{i}] is a {type(row).__name__}, expected a mapping with {', '.join(ROW_KEYS)}")
    missing = [key for key in ROW_KEYS if key not in row]
    if missing:
        raise ValueError(f"rows[{i}] lacks {', '.join(missing)}: a RegBench row has {', '.join(ROW_KEYS)}")
    try:
        return next_token_truth(row)
    except (KeyError, TypeError, IndexError, ValueError) as err:
        raise ValueError(
            f"rows[{i}] is not a RegBench row ({type(err).__name__}: {err}): expected {', '.join(ROW_KEYS)} with "
            "transitions [{src, symbol, dst}] over the row's symbols"
        ) from None
