"""What was tried behind a finding whose runs did not train: for each model the finding names, every committed
setting that measured it (searches, pilots, seeded experiments), how many experiments they span, and the best value
of the finding's in-range control any of them reached. A reader sees "did not train" beside the recipes that were
searched, and a model that did learn somewhere (only not beside its rival) is told apart from one no recipe trained.
"""

from __future__ import annotations

from dataclasses import dataclass

from .findings import criterion_value, measured
from .papers import Entry, Finding, PaperNumbers, meets, model_name, rule_text
from .runs import RunRecord


@dataclass(frozen=True)
class Attempt:
    """One model's committed attempts at a finding's control.

    Args:
        model: the model as the finding's numbers label it.
        control: the in-range rule, as printed (`model.accuracy_in_train_range ≥ 0.9`).
        experiments: the experiment folders with a setting of this model, sorted.
        settings: how many settings (each with its seeds) measured it.
        best: the best control value of any setting (its seeds' mean), or None where no setting reports it.
        best_where: that setting, as the report names it (`experiment` / `run`).
        learned: whether `best` meets the control.
    """

    model: str
    control: str
    experiments: tuple[str, ...]
    settings: int
    best: float | None
    best_where: str
    learned: bool

    def as_json(self) -> dict:
        return {"model": self.model, "control": self.control, "experiments": list(self.experiments),
                "settings": self.settings, "best": self.best, "best_run": self.best_where or None,
                "learned": self.learned}  # fmt: skip


def _models(finding: Finding, numbers: PaperNumbers) -> list[Entry]:
    """The finding's entries, one per model (task and match), in the finding's order."""
    ids = [i for pair in finding.pairs for i in pair] if finding.pairs else list(finding.entries)
    seen, entries = set(), []
    for entry in (numbers.entries[i] for i in ids):
        key = (entry.task, repr(sorted(entry.match.items())))
        if key not in seen:
            seen.add(key)
            entries.append(entry)
    return entries


def attempts(finding: Finding, numbers: PaperNumbers, records: list[RunRecord]) -> list[Attempt]:
    """Per model, what was tried against the finding's first in-range control; [] where it has none."""
    rule = next((r["in_range"] for r in finding.control if "in_range" in r), None)
    if rule is None:
        return []
    control = f"{rule['metric']} {rule_text(rule)}"
    found = []
    models = _models(finding, numbers)
    rows_differ = len({e.row for e in models}) > 1 or len(models) == 1
    for entry in models:
        settings = measured(entry, records)
        scored = [(v, s) for s in settings if (v := criterion_value(rule, s)) is not None]
        best, where = max(scored, key=lambda pair: pair[0]) if scored else (None, None)
        found.append(Attempt(model=model_name(entry, rows_differ), control=control,
                             experiments=tuple(sorted({s.experiment for s in settings})), settings=len(settings),
                             best=best, best_where=where.where if where else "",
                             learned=best is not None and meets(rule, best)))  # fmt: skip
    return found


def attempts_rows(found: list[Attempt]) -> list[list[str]]:
    """The page's table: model, settings tried, experiments, best control value and where."""
    return [[a.model, str(a.settings), ", ".join(f"`{e}`" for e in a.experiments) or "–",
             "—" if a.best is None else f"{a.best:.3f}" + (" (learned)" if a.learned else ""),
             a.best_where or "–"] for a in found]  # fmt: skip
