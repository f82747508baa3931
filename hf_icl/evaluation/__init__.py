"""Evaluation against exact ground truth (DESIGN §2.3): metric functions and ``evaluate`` modules."""

from pathlib import Path

from .metrics import accuracy, regbench_metrics, tvd

REGBENCH_METRIC_PATH: str = str(Path(__file__).parent / "metric_modules" / "regbench")
"""Directory of the RegBench ``evaluate.Metric``: ``evaluate.load(REGBENCH_METRIC_PATH)`` works offline."""

__all__ = ["REGBENCH_METRIC_PATH", "accuracy", "regbench_metrics", "tvd"]
