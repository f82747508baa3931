"""Next-token metrics against exact ground truth (P1 §4 eq. 8-9; DESIGN §5.2).

* accuracy: fraction of positions whose argmax under the model has true probability > 0 (eq. 8);
* TVD: ½·L1 between the model's and the true next-token distribution over the whole vocabulary,
  averaged over positions (eq. 9).

Both take ``(T, V)`` arrays (or row-wise concatenations of instances, which gives the micro-average the
paper reports). A model vocabulary larger than the truth's is allowed: the truth is zero-padded. RegBench's
``regbench_metrics`` (the truth from each row's automaton) is in :mod:`hf_icl.tasks.regbench.metrics`.
"""

from __future__ import annotations

import importlib

import numpy as np


def _aligned(probs, truth) -> tuple[np.ndarray, np.ndarray]:
    """Checks shapes and zero-pads ``truth`` to the model's vocabulary; returns float arrays (T, V)."""
    probs, truth = np.asarray(probs, dtype=np.float64), np.asarray(truth, dtype=np.float64)
    if probs.ndim != 2 or truth.ndim != 2:
        raise ValueError(f"probs.shape={probs.shape}, truth.shape={truth.shape}: both must be (T, V)")
    if probs.shape[0] != truth.shape[0] or probs.shape[1] < truth.shape[1]:
        raise ValueError(
            f"probs.shape={probs.shape} does not match truth.shape={truth.shape}: need the same number of "
            "positions and at least as many vocabulary columns"
        )
    if probs.shape[1] > truth.shape[1]:
        truth = np.pad(truth, ((0, 0), (0, probs.shape[1] - truth.shape[1])))  # (T, V_model)
    return probs, truth


def accuracy(probs, truth) -> float:
    """Greedy accuracy: share of positions where ``argmax(probs)`` has true probability > 0.

    Args:
        probs: model distributions, shape ``(T, V_model)`` with ``V_model >= V``.
        truth: true distributions, shape ``(T, V)``.

    Returns:
        Accuracy in [0, 1] (``nan`` for ``T == 0``).
    """
    probs, truth = _aligned(probs, truth)
    if probs.shape[0] == 0:
        return float("nan")
    picked = truth[np.arange(probs.shape[0]), probs.argmax(axis=1)]  # (T,) first max on ties
    return float((picked > 0).mean())


def tvd(probs, truth) -> float:
    """Total variation distance ½·Σ_v |p − q|, averaged over positions.

    Args:
        probs: model distributions, shape ``(T, V_model)`` with ``V_model >= V``.
        truth: true distributions, shape ``(T, V)``.

    Returns:
        Mean TVD (``nan`` for ``T == 0``).
    """
    probs, truth = _aligned(probs, truth)
    if probs.shape[0] == 0:
        return float("nan")
    return float(0.5 * np.abs(probs - truth).sum(axis=1).mean())


def __getattr__(name: str):
    metric = importlib.import_module("hf_icl.tasks.family").declared_metrics().get(name)
    if metric is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ..utils.deprecation import moved_names  # a family's own metric (RegBench's) moved to its family folder

    return moved_names(f"{__name__}.{name}", {name: metric.__module__})(name)
