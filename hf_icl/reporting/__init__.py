"""The reproduction report (`python -m hf_icl.report`): run folders' `metrics.json` beside the papers' numbers."""

from .build import build_report
from .papers import PAPER_NUMBERS, Contrast, Entry, PaperNumbers, judge, judge_contrast, load_paper_numbers
from .runs import RunRecord, find_runs, matches, measure

__all__ = [
    "PAPER_NUMBERS",
    "Contrast",
    "Entry",
    "PaperNumbers",
    "RunRecord",
    "build_report",
    "find_runs",
    "judge",
    "judge_contrast",
    "load_paper_numbers",
    "matches",
    "measure",
]
