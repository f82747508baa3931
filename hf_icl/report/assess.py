"""One verdict per finding: values and outcomes (`findings.py`), contrasts and parities (`contrasts.py`)."""

from __future__ import annotations

from .attempts import attempts
from .contrasts import assess_contrast
from .findings import DID_NOT_TRAIN, Assessment, assess_numbers
from .papers import Finding, PaperNumbers
from .runs import RunRecord


def assess(finding: Finding, numbers: PaperNumbers, records: list[RunRecord]) -> Assessment:
    """The verdict on one finding, by its kind; where a run of it did not train, what was tried beside it."""
    if finding.kind in ("contrast", "parity"):
        result = assess_contrast(finding, numbers, records)
    else:
        result = assess_numbers(finding, numbers, records)
    if any(why.startswith(DID_NOT_TRAIN) for _, _, why in result.others):
        result.attempts = attempts(finding, numbers, records)
    return result
