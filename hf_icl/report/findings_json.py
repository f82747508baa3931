"""`findings.json`: one object per finding, the machine-readable form of the report's verdicts, from which the
report's and the README's counts are taken.

Each object holds `id`, `paper`, `kind` (value, outcome, contrast, parity), `claim`, `verdict` (reproduced,
direction, not_reproduced, inconclusive, not_run), `why` (the kind of inconclusive, or the seed cap), `reason`,
`seeds` (model → seeds of the setting used), `pairs` (contrasts and parities: `{a, b, measured, verdict, why,
separation}`), `separation` (the weakest pair's `{method, statistic, p_value, interval, confidence, seeds}`, or
null), `scaled` (the scale phrase, or null), `runs` (the run folders it rests on, relative to the report),
`would_change` (what evidence would move the verdict) and `tried` (where a run did not train: per model, the
settings and experiments that measured it and the best in-range control value, see `attempts.py`; else []).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

from .findings import Assessment, what_would_change
from .papers import DIRECTION_ONLY, INCONCLUSIVE, NOT_REPRODUCED, NOT_RUN, REPRODUCED
from .runs import scale_text

VERDICT_KEYS = {REPRODUCED: "reproduced", DIRECTION_ONLY: "direction", NOT_REPRODUCED: "not_reproduced",
                INCONCLUSIVE: "inconclusive", NOT_RUN: "not_run"}  # fmt: skip
"""The report's verdicts as `findings.json` spells them."""


def finding_object(assessment: Assessment, output_dir: Path) -> dict:
    finding = assessment.finding
    tests = [pair["separation"] for pair in assessment.pairs if pair.get("separation")]
    weakest = max(tests, key=lambda t: t["p_value"]) if tests else None
    runs = sorted({_folder(run.file, output_dir) for setting in assessment.evidence for run in setting.runs})
    return {
        "id": finding.id,
        "paper": finding.paper,
        "kind": finding.kind,
        "claim": finding.claim,
        "verdict": VERDICT_KEYS[assessment.verdict],
        "why": assessment.why or None,
        "reason": assessment.reason,
        "seeds": dict(assessment.seeds),
        "pairs": [dict(pair) for pair in assessment.pairs],
        "separation": weakest,
        "scaled": scale_text(assessment.scaled) if assessment.scaled else None,
        "runs": runs,
        "would_change": what_would_change(assessment),
        "tried": [attempt.as_json() for attempt in assessment.attempts],
    }


def _folder(file: Path, output_dir: Path) -> str:
    """A run's folder (or copied metrics file) relative to the report."""
    place = file.parent if file.name == "metrics.json" else file
    return Path(os.path.relpath(place.resolve(), output_dir.resolve())).as_posix()


def findings_text(assessments: list[Assessment], output_dir: Path) -> str:
    return json.dumps([finding_object(a, output_dir) for a in assessments], indent=1, ensure_ascii=False) + "\n"


def verdict_counts(objects: list[dict], paper: str | None = None) -> Counter:
    """Findings per verdict key, of one paper or all."""
    return Counter(o["verdict"] for o in objects if paper is None or o["paper"] == paper)
