"""The papers' numbers and findings (`paper_numbers.yaml`) and the rules that rate one measured number.

A **number** (an `Entry`) is one published value: a table cell, a figure reading, or a Table-1 outcome (✓ / ▲ / ✗).
A **finding** (a `Finding`) is what a paper claims and what the report gives one verdict: the paper's numbers for a
model (`value`), a model succeeding or failing (`outcome`), one model beating another (`contrast`), or two models on
par (`parity`). Each is counted once, however many experiments measure it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import yaml

PAPER_NUMBERS = Path(__file__).with_name("paper_numbers.yaml")
REPRODUCED, DIRECTION_ONLY, NOT_REPRODUCED = "reproduced", "direction only", "not reproduced"
INCONCLUSIVE, NOT_RUN = "inconclusive", "not run"
VERDICTS = (REPRODUCED, DIRECTION_ONLY, NOT_REPRODUCED, INCONCLUSIVE, NOT_RUN)
MARKS = {REPRODUCED: "✔", DIRECTION_ONLY: "↗", NOT_REPRODUCED: "✘", INCONCLUSIVE: "?", NOT_RUN: "·"}
SETTINGS = ("metric", "better", "tolerance", "scale", "reference", "statistic", "unit", "setting", "proxy", "select_on")
OUTCOMES = {"✓": "succeeds", "✗": "fails", "▲": "gap"}
KINDS = ("value", "outcome", "contrast", "parity")


@dataclass(frozen=True)
class Paper:
    """A paper as cited: `key` (P1 … P5), title, authors, year, and its arXiv id or venue where known."""

    key: str
    title: str
    authors: str
    year: int
    arxiv: str | None = None
    venue: str | None = None

    @property
    def short(self) -> str:
        return f"{self.authors.split(',')[0].split()[-1]} et al. ({self.year})"

    @property
    def citation(self) -> str:
        where = [f"arXiv:{self.arxiv}" if self.arxiv else None, self.venue]
        return f"{self.authors}. *{self.title}*. {self.year}. " + ", ".join(w for w in where if w) + "."

    @property
    def link(self) -> str | None:
        return f"https://arxiv.org/abs/{self.arxiv}" if self.arxiv else None


@dataclass(frozen=True)
class Entry:
    """One published number (or outcome) and how a run reports it.

    Args:
        id: `source/row/column`, the name findings use.
        paper, source, where: the paper (P1 … P5), the source id and its description (table, figure, setting).
        row, column: labels as printed.
        task: the hf_icl task a run must have.
        match: further conditions on a run (see `runs.matches`).
        metric: path under a run's `test` (and `validation`) results.
        value: the paper's number as a fraction, an outcome symbol (✓ ▲ ✗), or `None` where the paper states only
            an ordering.
        better, tolerance, scale, reference, statistic: see paper_numbers.yaml.
        setting: the paper's setting, `[{path, paper, label, default}]`; a run below it on any item is scaled.
        proxy: a substitution that makes every run scaled (another corpus), or `None`.
        select_on: the validation path (higher is better) that selects among settings where `metric` has no
            validation value (accuracy beyond the training lengths: the validation split holds training lengths
            only), or `None` (select on `metric` itself).
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
    setting: tuple = ()
    proxy: str | None = None
    select_on: str | None = None

    @property
    def outcome(self) -> bool:
        return isinstance(self.value, str)

    @property
    def label(self) -> str:
        return f"{self.row} · {self.column}"


@dataclass(frozen=True)
class Finding:
    """One claim of a paper, rated once. See paper_numbers.yaml for `kind`, `criterion`, `expect` and `control`."""

    id: str
    paper: str
    kind: str
    claim: str
    entries: tuple = ()
    pairs: tuple = ()  # (better id, worse id) for a contrast; the two sides of a parity
    criterion: dict | None = None
    expect: str | None = None
    control: tuple = ()

    @property
    def failure(self) -> bool:
        """Whether the claim says a model fails (X fails, or X ≫ Y): such a claim needs a control."""
        return bool(self.control)


@dataclass
class PaperNumbers:
    papers: dict[str, Paper]
    sources: list[dict]
    entries: dict[str, Entry] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)


def load_paper_numbers(path: str | Path = PAPER_NUMBERS) -> PaperNumbers:
    """Every paper, entry and finding of `paper_numbers.yaml`, with row, column, source and metric settings resolved.

    Raises:
        ValueError: a finding names an unknown entry, paper or kind, or lacks what its kind needs.
    """
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    papers = {key: Paper(key=key, **fields) for key, fields in data["papers"].items()}
    numbers = PaperNumbers(papers, data["sources"])
    for source in data["sources"]:
        for row in source["rows"]:
            for column_id, column in source["columns"].items():
                if column_id not in row:
                    continue
                settings = {k: v for k, v in {**source, **column, **row}.items() if k in SETTINGS}
                metric = settings.pop("metric").replace("{id}", str(row["id"]))
                settings = {**data["metrics"].get(metric.rsplit(".", 1)[-1], {}), **settings}
                value = row[column_id]
                if settings.pop("unit", None) == "percent" and isinstance(value, (int, float)):
                    value = value / 100  # references are fractions already
                settings["setting"] = tuple(settings.get("setting") or ())
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
    for item in data.get("findings", []):
        numbers.findings.append(_finding(item, numbers, path))
    return numbers


def _finding(item: dict, numbers: PaperNumbers, path) -> Finding:
    name = item.get("id", "?")
    if item.get("kind") not in KINDS:
        raise ValueError(f"finding {name!r}: kind={item.get('kind')!r} is not one of: {', '.join(KINDS)}")
    if item.get("paper") not in numbers.papers:
        raise ValueError(f"finding {name!r}: paper={item.get('paper')!r} is not one of: {', '.join(numbers.papers)}")
    pairs = ()
    if item["kind"] == "contrast":
        better, worse = _as_list(item["better"]), _as_list(item["worse"])
        pairs = (
            tuple(zip(better, worse)) if item.get("pairs") == "zip" else tuple((b, w) for b in better for w in worse)
        )
        entries = tuple(dict.fromkeys(e for pair in pairs for e in pair))
    elif item["kind"] == "parity":
        sides = item.get("between") or []
        if len(sides) != 2:
            raise ValueError(f"finding {name!r}: a parity needs `between`: two entry ids (or lists of them)")
        pairs = tuple((a, b) for a in _as_list(sides[0]) for b in _as_list(sides[1]))
        entries = tuple(dict.fromkeys(e for pair in pairs for e in pair))
    else:
        entries = tuple(_as_list(item.get("entries", [])))
    for entry in entries:
        if entry not in numbers.entries:
            raise ValueError(f"finding {name!r}: entry {entry!r} is not in {path}")
    if item["kind"] == "outcome" and (item.get("expect") not in ("succeeds", "fails") or not item.get("criterion")):
        raise ValueError(f"finding {name!r}: an outcome needs expect: succeeds | fails and a criterion")
    if not entries:
        raise ValueError(f"finding {name!r}: no entries")
    return Finding(
        id=name,
        paper=item["paper"],
        kind=item["kind"],
        claim=item["claim"],
        entries=entries,
        pairs=pairs,
        criterion=item.get("criterion"),
        expect=item.get("expect"),
        control=tuple(item.get("control") or ()),
    )


def _as_list(value) -> list:
    return value if isinstance(value, list) else [value]


def model_name(entry: Entry, rows_differ: bool) -> str:
    """The model an entry measures, among a finding's entries: its row where the entries' rows differ (P1's and P4's
    rows are models), else its column (P2 Table 1's rows are tasks, its columns models)."""
    return entry.row if rows_differ else entry.column


def on_scale(entry: Entry, value: float) -> float:
    return math.log10(max(value, 1e-30)) if entry.scale == "log" else value


def gain(entry: Entry, a: float, b: float) -> float:
    """How much `a` beats `b` in `entry`'s direction, on its scale (decades on a log scale)."""
    sign = 1 if entry.better == "higher" else -1
    return sign * (on_scale(entry, a) - on_scale(entry, b))


def side(entry: Entry, value: float) -> int:
    """+1 above the reference, −1 below, 0 within the band around it (the tolerance; none on a log scale)."""
    band = 0.0 if entry.scale == "log" else entry.tolerance
    offset = on_scale(entry, value) - on_scale(entry, entry.reference)
    return 0 if abs(offset) <= band else (1 if offset > 0 else -1)


def meets(rule: dict, measured: float) -> bool:
    """Whether `measured` satisfies `{at_least: x}` or `{at_most: x}`."""
    return measured >= rule["at_least"] if "at_least" in rule else measured <= rule["at_most"]


def rule_text(rule: dict) -> str:
    return f"≥ {rule['at_least']:g}" if "at_least" in rule else f"≤ {rule['at_most']:g}"


def judge_value(entry: Entry, measured: float) -> str:
    """Reproduced within the tolerance; direction only on the paper's side of the reference; else not reproduced."""
    if abs(on_scale(entry, measured) - on_scale(entry, entry.value)) <= entry.tolerance:
        return REPRODUCED
    if entry.reference is not None and side(entry, measured) == side(entry, entry.value) != 0:
        return DIRECTION_ONLY
    return NOT_REPRODUCED


def judge_gap(better: Entry, worse: Entry, measured_better: float, measured_worse: float) -> str:
    """A contrast in one experiment: `better` must win by more than its tolerance; reproduced when the gap is also
    within the tolerance of the paper's gap (or the paper states the ordering only)."""
    ours = gain(better, measured_better, measured_worse)
    if ours <= better.tolerance:
        return NOT_REPRODUCED
    if not all(isinstance(e.value, (int, float)) for e in (better, worse)):
        return REPRODUCED
    theirs = gain(better, better.value, worse.value)
    return REPRODUCED if abs(ours - theirs) <= better.tolerance else DIRECTION_ONLY


def judge_parity(first: Entry, second: Entry, measured_first: float, measured_second: float) -> str:
    """Two models on par in one experiment: reproduced when neither beats the other by more than the tolerance."""
    return REPRODUCED if abs(gain(first, measured_first, measured_second)) <= first.tolerance else NOT_REPRODUCED


def combine(verdicts: list[str]) -> str:
    """One verdict from parts: reproduced if all are, direction only if all at least are, else not reproduced."""
    if all(v == REPRODUCED for v in verdicts):
        return REPRODUCED
    if all(v in (REPRODUCED, DIRECTION_ONLY) for v in verdicts):
        return DIRECTION_ONLY
    return NOT_REPRODUCED
