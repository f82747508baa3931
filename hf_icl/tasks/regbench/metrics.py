"""RegBench's metric (P1 §4 eq. 8-9; DESIGN §5.2): accuracy and TVD of next-token distributions against the exact
truth of each row's automaton, micro-averaged over every position of every row.

``hf_icl.evaluation.regbench_metrics`` (a stable name) is this function.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ...evaluation.metrics import accuracy, tvd
from .regbench import VOCAB_SIZE, next_token_truth


def regbench_metrics(probs: Sequence[np.ndarray], rows: Sequence[Mapping]) -> dict[str, float]:
    """Micro-averaged accuracy and TVD over all positions of all RegBench rows.

    Args:
        probs: one ``(len(text) - 1, V_model)`` array per row.
        rows: RegBench rows (``text``, ``start_state``, ``transitions``), same order as ``probs``.

    Returns:
        ``{"accuracy": float, "tvd": float}``.
    """
    if len(probs) != len(rows):
        raise ValueError(f"len(probs)={len(probs)} does not match len(rows)={len(rows)}")
    truths = [next_token_truth(row) for row in rows]
    p = np.concatenate([np.asarray(x, dtype=np.float64) for x in probs]) if probs else np.zeros((0, VOCAB_SIZE))
    q = np.concatenate(truths) if truths else np.zeros((0, VOCAB_SIZE))
    return {"accuracy": accuracy(p, q), "tvd": tvd(p, q)}
