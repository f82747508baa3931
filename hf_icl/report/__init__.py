"""The reproduction report (`python -m hf_icl.report`): run folders' `metrics.json` beside the papers' numbers."""

from .build import build_report
from .papers import PAPER_NUMBERS, Contrast, Entry, PaperNumbers, judge, judge_contrast, load_paper_numbers
from .runs import RunRecord, find_runs, matches, measure


def __getattr__(name: str):
    """`main` and `build_parser` live in `__main__.py` (so `python -m hf_icl.report` runs it); they are imported only
    when asked for, so running the module does not import it twice."""
    if name in ("main", "build_parser", "collect"):
        from . import __main__ as cli

        return getattr(cli, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
