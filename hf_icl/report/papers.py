"""The papers' numbers (`paper_numbers.yaml`) and the rules that call a measured number reproduced or not.

Verdicts (the same words everywhere in the report):

- **reproduced**: the measured number is within the metric's tolerance of the paper's (absolute, or in decades on
  a log scale); for an outcome (✓ / ✗), the run's outcome under the paper's criterion is the paper's; for a contrast
  (the paper's claim that A beats B), A beats B by more than the tolerance and the gap is within the tolerance of
  the paper's gap (or the paper gives no numbers, only the claim).
- **direction only**: not within the tolerance, but on the same side of the reference level as the paper's number
  (chance, or a failure threshold; by more than the tolerance on a linear scale, strictly on a log scale); for a
  contrast, A beats B by more than the tolerance but the gap is off.
- **not reproduced**: anything else: the other side of the reference, no clear gap, or the reverse of the claim.
- ▲ cells (a gap to the other models), outcomes without a criterion and orderings stated without numbers are
  **not judged** alone; their contrasts are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import yaml

PAPER_NUMBERS = Path(__file__).with_name("paper_numbers.yaml")
REPRODUCED, DIRECTION_ONLY, NOT_REPRODUCED, NOT_JUDGED = "reproduced", "direction only", "not reproduced", "not judged"
VERDICTS = (REPRODUCED, DIRECTION_ONLY, NOT_REPRODUCED, NOT_JUDGED)
SETTINGS = ("metric", "better", "tolerance", "scale", "reference", "statistic", "unit", "success")
OUTCOMES = {"✓": "succeeds", "✗": "fails", "▲": "gap"}


@dataclass(frozen=True)
class Entry:
    """One published number (or outcome) and how a run reports it.

    Args:
        id: `source/row/column`, the name contrasts use.
        paper, source, where: the paper (P1 … P5), the source id and its description (table, figure, setting).
        row, column: labels as printed.
        task: the hf_icl task a run must have.
        match: further conditions on a run (see `runs.matches`).
        metric: path under a run's `test` results.
        value: the paper's number as a fraction, an outcome symbol (✓ ▲ ✗), or `None` where the paper states only
            an ordering (the entry then serves contrasts).
        better, tolerance, scale, reference, statistic, success: see paper_numbers.yaml.
    """

    id: str
    paper: str
    source: str
    where: str
    row: str
    column: str
    task: str
    match: dict
    metric: str
    value: float | str | None
    better: str = "higher"
    tolerance: float = 0.03
    scale: str = "linear"
    reference: float | None = None
    statistic: str = "mean"
    success: dict | None = None

    @property
    def outcome(self) -> bool:
        return isinstance(self.value, str)


@dataclass(frozen=True)
class Contrast:
    """The paper's claim that entry `better` beats entry `worse`."""

    claim: str
    better: str
    worse: str


@dataclass
class PaperNumbers:
    papers: dict
    sources: list[dict]
    entries: dict[str, Entry] = field(default_factory=dict)
    contrasts: list[Contrast] = field(default_factory=list)


def load_paper_numbers(path: str | Path = PAPER_NUMBERS) -> PaperNumbers:
    """Every entry and contrast of `paper_numbers.yaml`, with row, column, source and metric settings resolved."""
    data = yaml.safe_load(Path(path).read_text())
    numbers = PaperNumbers(data["papers"], data["sources"])
    for source in data["sources"]:
        for row in source["rows"]:
            for column_id, column in source["columns"].items():
                if column_id not in row:
                    continue
                settings = {k: v for k, v in {**source, **column, **row}.items() if k in SETTINGS}
                metric = settings.pop("metric").replace("{id}", str(row["id"]))
                settings = {**data["metrics"].get(metric.rsplit(".", 1)[-1], {}), **settings}
                value = row[column_id]
                if settings.pop("unit", None) == "percent" and value is not None:  # references are fractions already
                    value = value / 100
                entry = Entry(
                    id=f"{source['id']}/{row['id']}/{column_id}",
                    paper=source["paper"],
                    source=source["id"],
                    where=source["where"],
                    row=row["row"],
                    column=column.get("label", column_id),
                    task=row.get("task", source.get("task")),
                    match={**source.get("match", {}), **column.get("match", {}), **row.get("match", {})},
                    metric=metric,
                    value=value,
                    **settings,
                )
                numbers.entries[entry.id] = entry
    for contrast in data.get("contrasts", []):
        for better in _as_list(contrast["better"]):
            for worse in _as_list(contrast["worse"]):
                for name in (better, worse):
                    if name not in numbers.entries:
                        raise ValueError(f"contrast {contrast['claim']!r}: entry {name!r} is not in {path}")
                numbers.contrasts.append(Contrast(contrast["claim"], better, worse))
    return numbers


def _as_list(value) -> list:
    return value if isinstance(value, list) else [value]


def _on_scale(entry: Entry, value: float) -> float:
    return math.log10(max(value, 1e-30)) if entry.scale == "log" else value


def gain(entry: Entry, a: float, b: float) -> float:
    """How much `a` beats `b` in `entry`'s direction, on its scale (decades on a log scale)."""
    sign = 1 if entry.better == "higher" else -1
    return sign * (_on_scale(entry, a) - _on_scale(entry, b))


def side(entry: Entry, value: float) -> int:
    """+1 above the reference, −1 below, 0 within the band around it (the tolerance; none on a log scale)."""
    band = 0.0 if entry.scale == "log" else entry.tolerance
    offset = _on_scale(entry, value) - _on_scale(entry, entry.reference)
    return 0 if abs(offset) <= band else (1 if offset > 0 else -1)


def outcome_of(entry: Entry, measured: float) -> str | None:
    """`succeeds` / `fails` under the entry's rule, or `None` without one."""
    if not entry.success:
        return None
    if "at_least" in entry.success:
        return "succeeds" if measured >= entry.success["at_least"] else "fails"
    return "succeeds" if measured <= entry.success["at_most"] else "fails"


def judge(entry: Entry, measured: float) -> str:
    """The verdict on one measured number (see the module docstring)."""
    if entry.value is None:
        return NOT_JUDGED
    if entry.outcome:
        expected, found = OUTCOMES[entry.value], outcome_of(entry, measured)
        if expected == "gap" or found is None:
            return NOT_JUDGED
        return REPRODUCED if found == expected else NOT_REPRODUCED
    if abs(_on_scale(entry, measured) - _on_scale(entry, entry.value)) <= entry.tolerance:
        return REPRODUCED
    if entry.reference is not None and side(entry, measured) == side(entry, entry.value):
        return DIRECTION_ONLY
    return NOT_REPRODUCED


def judge_contrast(better: Entry, worse: Entry, measured_better: float, measured_worse: float) -> str:
    """The verdict on a contrast measured in one experiment (tolerance and scale of the `better` entry)."""
    ours = gain(better, measured_better, measured_worse)
    if ours <= better.tolerance:
        return NOT_REPRODUCED
    if better.outcome or worse.outcome or better.value is None or worse.value is None:
        return REPRODUCED  # the paper states the ordering only
    theirs = gain(better, better.value, worse.value)
    return REPRODUCED if abs(ours - theirs) <= better.tolerance else DIRECTION_ONLY
