"""The reproduction report (`python -m hf_icl.report`): run folders' `metrics.json` beside the papers' numbers, one
verdict per finding."""

from .assess import assess
from .build import build_report, headline_table
from .findings import Assessment, select
from .papers import (
    PAPER_NUMBERS,
    VERDICTS,
    Entry,
    Finding,
    Paper,
    PaperNumbers,
    judge_gap,
    judge_parity,
    judge_value,
    load_paper_numbers,
)
from .runs import RunRecord, Setting, find_runs, matches, settings_of


def __getattr__(name: str):
    """`main`, `build_parser` and `collect` live in `__main__.py` (so `python -m hf_icl.report` runs it); they are
    imported only when asked for, so running the module does not import it twice."""
    if name in ("main", "build_parser", "collect"):
        from . import __main__ as cli

        return getattr(cli, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "PAPER_NUMBERS",
    "VERDICTS",
    "Assessment",
    "Entry",
    "Finding",
    "Paper",
    "PaperNumbers",
    "RunRecord",
    "Setting",
    "assess",
    "build_report",
    "find_runs",
    "headline_table",
    "judge_gap",
    "judge_parity",
    "judge_value",
    "load_paper_numbers",
    "matches",
    "select",
    "settings_of",
]
