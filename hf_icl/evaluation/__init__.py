"""Evaluation against exact ground truth (DESIGN §2.3): metric functions, shared evaluation helpers and the
``python -m hf_icl.evaluation`` command (:mod:`.__main__`); each task family's evaluator is in its folder.

A task family's own metrics (``TaskFamily.metrics``, e.g. RegBench's ``regbench_metrics``) are served here by the
stable names the family declares, resolved on first use: this package imports nothing from ``hf_icl.tasks``, whose
evaluators import it.
"""

import importlib
from pathlib import Path

from .metrics import accuracy, tvd

REGBENCH_METRIC_PATH: str = str(Path(__file__).parent / "metric_modules" / "regbench")
"""Directory of the RegBench ``evaluate.Metric``: ``evaluate.load(REGBENCH_METRIC_PATH)`` works offline."""

__all__ = ["REGBENCH_METRIC_PATH", "accuracy", "regbench_metrics", "tvd"]


def __getattr__(name: str):
    metric = importlib.import_module("hf_icl.tasks.family").declared_metrics().get(name)  # a family's metric
    if metric is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return metric
