"""One verdict per finding: values and outcomes (`findings.py`), contrasts and parities (`contrasts.py`)."""

from __future__ import annotations

from .contrasts import assess_contrast
from .findings import Assessment, assess_numbers
from .papers import Finding, PaperNumbers
from .runs import RunRecord


def assess(finding: Finding, numbers: PaperNumbers, records: list[RunRecord]) -> Assessment:
    """The verdict on one finding, by its kind."""
    if finding.kind in ("contrast", "parity"):
        return assess_contrast(finding, numbers, records)
    return assess_numbers(finding, numbers, records)
