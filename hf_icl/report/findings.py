"""One verdict per finding: which runs count as evidence, which setting is selected, and what the paper's claim gets.

Rules (the report prints them):

- **Selection on validation.** Where several settings could answer for a number, the one with the best validation
  score is selected and its *test* number reported. Settings without validation numbers are never selected on test:
  if they all lead to the same verdict, that verdict stands and no single setting is named; if they disagree, the
  verdict is **inconclusive: not selected** and every setting is listed.
- **The paper's setting first.** A run below the paper's setting (fewer key–value pairs, dimensions, training
  lengths, steps, a smaller model, another corpus) is **scaled**; the verdict names its scale and is never counted as
  the paper's setting. Runs at the paper's setting are preferred where there are any, and of runs of one model (same
  architecture and parameter count) only the longest-trained counts (most training sequences, steps × batch size):
  the budget is fixed before any result is seen.
- **Failure findings need a control.** A claim that a model fails (X fails, X ≫ Y) counts a run only if the failing
  model learned the in-range task in it, or the contrasting model succeeded in the same experiment. Runs that meet
  neither did not train; if no run is left the verdict is **inconclusive: did not train**. A claim that two models are
  on par needs one of them to have learned in that experiment (two models that learned nothing tie).
- **Seeds.** A setting's seeds give mean ± sd (the best seed where the paper reports its best); the verdict uses the
  mean, with the tolerance printed beside it.
- **Counted once.** Each finding and each published number gets one verdict, however many experiments measure it;
  a contrast is judged within one experiment (same budget and data), and experiments that disagree make it
  inconclusive.
- **A claim about several numbers needs them all.** Where some of a finding's numbers are measured and agree with the
  paper but others were never measured, the claim is not shown: **inconclusive: partly measured** (numbers that
  disagree with the paper still refute it).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .papers import (
    DIRECTION_ONLY,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    NOT_RUN,
    OUTCOMES,
    REPRODUCED,
    Entry,
    Finding,
    PaperNumbers,
    combine,
    judge_gap,
    judge_parity,
    judge_value,
    meets,
    on_scale,
    rule_text,
)
from .runs import RunRecord, Setting, settings_of

NOT_SELECTED, DID_NOT_TRAIN, PARTLY_MEASURED = "not selected", "did not train", "partly measured"


@dataclass
class Line:
    """One row of a finding's table: a number or a pair, the paper's value, ours, and their verdict."""

    label: str
    paper: str
    ours: str
    tolerance: str
    verdict: str
    where: str
    values: tuple = ()  # (paper, ours) floats for figures, where both are numbers


@dataclass
class Assessment:
    finding: Finding
    verdict: str
    reason: str
    scaled: list[tuple] = field(default_factory=list)  # (label, ours, paper) per dimension, see `runs.scale_text`
    lines: list[Line] = field(default_factory=list)
    others: list[tuple[str, str, str]] = field(default_factory=list)  # (where, ours, why it is not the evidence)
    evidence: list[Setting] = field(default_factory=list)


@dataclass
class Pick:
    """The outcome of a selection: one setting, or none (the candidates listed instead)."""

    setting: Setting | None
    how: str
    candidates: list[Setting]
    superseded: list[Setting] = field(default_factory=list)  # shorter runs of a model that also ran longer


def fmt(entry: Entry, value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.3g}" if entry.scale == "log" else f"{value:.3f}"


def paper_text(entry: Entry) -> str:
    if entry.value is None:
        return "(ordering only)"
    if isinstance(entry.value, str):
        return f"{entry.value} ({OUTCOMES[entry.value]})"
    return fmt(entry, entry.value)


def tolerance_text(entry: Entry) -> str:
    return f"±{entry.tolerance:g} decades" if entry.scale == "log" else f"±{entry.tolerance:g}"


def ours_text(entry: Entry, setting: Setting, metric: str | None = None) -> str:
    metric = metric or entry.metric
    value = setting.value(f"test.{metric}", entry.statistic)
    spread = setting.spread(f"test.{metric}")
    if len(setting.runs) == 1:
        return fmt(entry, value)
    if entry.statistic == "max":
        return f"{fmt(entry, value)} (best of {len(setting.runs)} seeds)"
    return f"{fmt(entry, value)} ± {fmt(entry, spread)} ({len(setting.runs)} seeds)"


def select(entry: Entry, candidates: list[Setting], metric: str | None = None, better: str | None = None) -> Pick:
    """Pick the setting that answers for `entry`: the paper's setting first, then the best validation score."""
    metric, better = metric or entry.metric, better or entry.better
    if not candidates:
        return Pick(None, NOT_RUN, [])
    at_paper = [s for s in candidates if not s.scale(entry)]
    pool = longest(at_paper or candidates)
    shorter = [s for s in at_paper or candidates if s not in pool]
    scored = validation_scores(pool, metric, entry.statistic)
    if not scored and entry.select_on:  # the metric has no validation counterpart: select on the declared one
        metric, better = entry.select_on, "higher"
        scored = validation_scores(pool, metric, entry.statistic)
    if scored:
        best = (max if better == "higher" else min)(scored, key=lambda sv: sv[1])[0]
        rest = len(pool) - len(scored)
        how = f"best validation {metric.split('.')[-1]} of {len(scored)} settings" if len(scored) > 1 else "one setting"
        return Pick(best, how + (f"; {rest} without validation numbers not considered" if rest else ""), pool, shorter)
    if len(pool) == 1:
        return Pick(pool[0], "the only setting", pool, shorter)
    return Pick(None, NOT_SELECTED, pool, shorter)


def validation_scores(settings: list[Setting], metric: str, statistic: str) -> list[tuple[Setting, float]]:
    """`(setting, its validation value of metric)` for the settings that have one."""
    scored = [(s, s.value(f"validation.{metric}", statistic)) for s in settings]
    return [(s, v) for s, v in scored if v is not None]


def longest(settings: list[Setting]) -> list[Setting]:
    """Of settings of one model (task, architecture, parameter count), those that trained on the most sequences."""
    most: dict[tuple, float] = {}
    for s in settings:
        most[s.model_key] = max(most.get(s.model_key, 0.0), s.training_sequences)
    return [s for s in settings if s.training_sequences >= most[s.model_key]]


def passes_control(finding: Finding, setting: Setting, records: list[RunRecord], task: str) -> bool:
    """Whether `setting` (the model the claim says fails) counts as evidence under the finding's control."""
    if not finding.control:
        return True
    for rule in finding.control:
        if "in_range" in rule:
            r = rule["in_range"]
            value = criterion_value(r, setting)
            if value is not None and meets(r, value):
                return True
        if "same_experiment" in rule:
            r = rule["same_experiment"]
            same = [s for s in settings_of(records, task, r.get("match", {})) if s.experiment == setting.experiment]
            if any(v is not None and meets(r, v) for v in (criterion_value(r, s) for s in same)):
                return True
    return False


def control_text(finding: Finding) -> str:
    parts = []
    for rule in finding.control:
        if "in_range" in rule:
            r = rule["in_range"]
            what = f"{r['metric']} − {r['minus']}" if "minus" in r else r["metric"]
            parts.append(f"the model's {what} {rule_text(r)}")
        if "same_experiment" in rule:
            r = rule["same_experiment"]
            who = ", ".join(f"{k.split('.')[-1]}={v}" for k, v in r.get("match", {}).items())
            parts.append(f"a run ({who}) in the same experiment with {criterion_name(r)} {rule_text(r)}")
    return " or ".join(parts)


def _candidates(finding: Finding, entry: Entry, records: list[RunRecord]) -> tuple[list[Setting], list[Setting]]:
    """(evidence, set aside) among the settings matching `entry`: set aside are those failing the control."""
    found = settings_of(records, entry.task, entry.match)
    found = [s for s in found if s.value(f"test.{entry.metric}") is not None]
    kept = [s for s in found if passes_control(finding, s, records, entry.task)]
    return kept, [s for s in found if s not in kept]


def criterion_value(criterion: dict, setting: Setting, statistic: str = "mean") -> float | None:
    """The test number an outcome criterion judges: `metric`, less `minus` where the criterion names one."""
    value = setting.value(f"test.{criterion['metric']}", statistic)
    if value is None or "minus" not in criterion:
        return value
    minus = setting.value(f"test.{criterion['minus']}", statistic)
    return None if minus is None else value - minus


def criterion_name(criterion: dict) -> str:
    """The criterion's `label`, else `accuracy` or, with `minus`, `3 − 0` (the last parts of the two paths)."""
    if "label" in criterion:
        return criterion["label"]
    name = criterion["metric"].split(".")[-1]
    return f"{name} − {criterion['minus'].split('.')[-1]}" if "minus" in criterion else name


def _outcome(finding: Finding, entry: Entry, setting: Setting) -> str:
    value = criterion_value(finding.criterion, setting, entry.statistic)
    return f"{'succeeds' if meets(finding.criterion, value) else 'fails'} ({fmt(entry, value)})"


def _rate(finding: Finding, entry: Entry, setting: Setting) -> str:
    if finding.kind == "outcome":
        value = criterion_value(finding.criterion, setting, entry.statistic)
        return (
            REPRODUCED
            if ("succeeds" if meets(finding.criterion, value) else "fails") == finding.expect
            else (NOT_REPRODUCED)
        )
    return judge_value(entry, setting.value(f"test.{entry.metric}", entry.statistic))


def assess(finding: Finding, numbers: PaperNumbers, records: list[RunRecord]) -> Assessment:
    """The verdict on one finding (see the module docstring)."""
    if finding.kind in ("contrast", "parity"):
        return _assess_contrast(finding, numbers, records)
    result = Assessment(finding, NOT_RUN, "no run measures it")
    verdicts, reasons, groups = [], [], {}
    for entry_id in finding.entries:  # numbers of one model (same task and match) share one selected setting
        entry = numbers.entries[entry_id]
        groups.setdefault((entry.task, repr(sorted(entry.match.items()))), []).append(entry)
    for entries in groups.values():
        lead = entries[0]
        kept, aside = _candidates(finding, lead, records)
        for s in aside:
            result.others.append((s.where, ours_text(lead, s), f"{DID_NOT_TRAIN} (control: {control_text(finding)})"))
        metric = finding.criterion["metric"] if finding.kind == "outcome" else lead.metric
        better = ("higher" if "at_least" in finding.criterion else "lower") if finding.kind == "outcome" else None
        pick = select(lead, kept, metric, better)
        if pick.setting is None and not pick.candidates:
            verdicts.append(INCONCLUSIVE if aside else NOT_RUN)
            reasons.append(f"{lead.row}: {DID_NOT_TRAIN}" if aside else f"{lead.row}: not run")
            continue
        chosen = [pick.setting] if pick.setting else pick.candidates
        for entry in entries:
            rated = {_rate(finding, entry, s) for s in chosen}
            verdict = rated.pop() if len(rated) == 1 else INCONCLUSIVE
            if pick.setting is None:
                split = Counter(_rate(finding, entry, s) for s in chosen)
                agreement = "agree" if verdict != INCONCLUSIVE else "disagree: not selected"
                how = f"{len(chosen)} settings without validation numbers {agreement}"
                if verdict == INCONCLUSIVE:
                    parts = ", ".join(f"{n} {v}" for v, n in sorted(split.items()))
                    reasons.append(f"{entry.label}: {len(chosen)} settings without validation numbers disagree "
                                   f"({parts}): not selected")  # fmt: skip
            else:
                how = f"{pick.setting.where}: {pick.how}"
            ours = ours_text(entry, pick.setting) if pick.setting else _range(entry, chosen)
            if finding.kind == "outcome":
                ours = _outcome(finding, entry, pick.setting) if pick.setting else ours
            elif pick.setting is not None and _edge(entry, pick.setting):
                how += "; at the tolerance edge with one seed"
            same = {s.value(f"test.{entry.metric}", entry.statistic) for s in chosen}
            shown = pick.setting or (chosen[0] if len(same) == 1 else None)  # settings that all measured one value
            result.lines.append(Line(entry.label, paper_text(entry), ours, tolerance_text(entry), verdict, how,
                                     _pair(entry, shown)))  # fmt: skip
            verdicts.append(verdict)
        kept_values = {ours_text(lead, s) for s in chosen}
        for s in pick.superseded:  # listed where it would have told another story
            if ours_text(lead, s) not in kept_values:
                result.others.append((s.where, ours_text(lead, s), "a longer run of the same model counts instead"))
        if pick.setting is None:
            if INCONCLUSIVE in verdicts:
                for s in chosen:
                    result.others.append((s.where, ours_text(lead, s), f"{_rate(finding, lead, s)}; not selected"))
        else:
            result.evidence.append(pick.setting)
            for s in pick.candidates:
                if s is not pick.setting:
                    result.others.append((s.where, ours_text(lead, s), "not selected"))
        result.scaled += [n for s in chosen for n in s.scale(lead) if n not in result.scaled]
    return _conclude(result, verdicts, reasons)


def _edge(entry: Entry, setting: Setting) -> bool:
    """One seed, and within a tenth of the tolerance of its edge: the verdict could flip with another seed."""
    if len(setting.runs) > 1 or not isinstance(entry.value, (int, float)):
        return False
    delta = abs(on_scale(entry, setting.value(f"test.{entry.metric}")) - on_scale(entry, entry.value))
    return abs(delta - entry.tolerance) <= 0.1 * entry.tolerance


def _range(entry: Entry, settings: list[Setting]) -> str:
    values = sorted(v for s in settings if (v := s.value(f"test.{entry.metric}", entry.statistic)) is not None)
    return fmt(entry, values[0]) if values[0] == values[-1] else f"{fmt(entry, values[0])} – {fmt(entry, values[-1])}"


def _pair(entry: Entry, setting: Setting | None) -> tuple:
    if setting is None or not isinstance(entry.value, (int, float)):
        return ()
    return (entry.value, setting.value(f"test.{entry.metric}", entry.statistic))


def _conclude(result: Assessment, verdicts: list[str], reasons: list[str]) -> Assessment:
    measured = [v for v in verdicts if v != NOT_RUN]
    if not measured:
        result.verdict, result.reason = NOT_RUN, "no run measures it"
    elif INCONCLUSIVE in measured:
        result.verdict = INCONCLUSIVE
        result.reason = "; ".join(reasons)
    else:
        result.verdict = combine(measured)
        missing = len(verdicts) - len(measured)
        result.reason = _reason(result) + (f"; {missing} of {len(verdicts)} numbers not measured" if missing else "")
        if missing and result.verdict in (REPRODUCED, DIRECTION_ONLY):  # what was measured agrees, the rest is unknown
            result.verdict, result.reason = INCONCLUSIVE, f"{PARTLY_MEASURED}: {result.reason}"
    if result.verdict == INCONCLUSIVE and any(DID_NOT_TRAIN in r for r in reasons):
        result.reason = f"{DID_NOT_TRAIN}: no run meets the control ({control_text(result.finding)})"
    return result


def _reason(result: Assessment) -> str:
    finding = result.finding
    if finding.kind == "outcome":
        rule = f"{criterion_name(finding.criterion)} {rule_text(finding.criterion)}"
        parts = [line.label.split(" · ") for line in result.lines]
        model = -1 if len(parts) == 1 or len({p[-1] for p in parts}) > 1 else 0  # the part that names the model
        ours = ", ".join(f"{p[model]} {line.ours}" for p, line in zip(parts, result.lines))
        return f"the paper: {finding.expect} (success is {rule}); ours: {ours}"
    if result.verdict == REPRODUCED:
        return "every number within its tolerance"
    if result.verdict == DIRECTION_ONLY:
        return "off by more than the tolerance, on the paper's side of the reference level"
    off = [line.label for line in result.lines if line.verdict != REPRODUCED]
    return "outside the tolerance: " + ", ".join(off)


def _assess_contrast(finding: Finding, numbers: PaperNumbers, records: list[RunRecord]) -> Assessment:
    """A contrast (`better` wins by more than the tolerance) or a parity (neither side does), pairing runs of one
    experiment; both sides' runs must meet the control, which for a parity is that either model learned in that
    experiment (two models that learned nothing tie; one that learned beside one that did not is a gap)."""
    judge = judge_parity if finding.kind == "parity" else judge_gap
    result = Assessment(finding, NOT_RUN, "no experiment measures both sides")
    by_experiment: dict[str, list[tuple]] = {}
    for better_id, worse_id in finding.pairs:
        better, worse = numbers.entries[better_id], numbers.entries[worse_id]
        sides = [settings_of(records, e.task, e.match) for e in (better, worse)]
        sides = [
            [s for s in side if s.value(f"test.{e.metric}") is not None] for side, e in zip(sides, (better, worse))
        ]
        for experiment in sorted({s.experiment for s in sides[0]} & {s.experiment for s in sides[1]}):
            picks = [select(e, [s for s in side if s.experiment == experiment])
                     for side, e in zip(sides, (better, worse))]  # fmt: skip
            by_experiment.setdefault(experiment, []).append((better, worse, *picks))
    outcomes = {}
    for experiment, pairs in by_experiment.items():
        rated, lines, aside = [], [], 0
        for better, worse, pick_b, pick_w in pairs:
            options = [(b, w) for b in _options(pick_b) for w in _options(pick_w)]
            trained = [  # both sides: a model that did not learn in range shows neither a win nor a loss beyond it
                (b, w)
                for b, w in options
                if passes_control(finding, w, records, worse.task) and passes_control(finding, b, records, better.task)
            ]
            label = (  # name what differs: the models of one table row, or the rows of one model
                f"{better.column} vs {worse.column} ({better.row})"
                if better.row == worse.row
                else f"{better.row} vs {worse.row} ({better.column})"
            )
            if not trained:
                aside += 1
                result.others.append((f"`{experiment}`", label, f"{DID_NOT_TRAIN} (control: {control_text(finding)})"))
                continue
            verdicts = {judge(better, worse, b.value(f"test.{better.metric}", better.statistic),
                                  w.value(f"test.{worse.metric}", worse.statistic)) for b, w in trained}  # fmt: skip
            verdict = verdicts.pop() if len(verdicts) == 1 else INCONCLUSIVE
            b, w = trained[0]
            one = len(trained) == 1
            ours = f"{ours_text(better, b)} vs {ours_text(worse, w)}" if one else f"{len(trained)} setting pairs"
            how = f"`{experiment}`" + ("" if one else f", {len(trained)} pairs of settings without validation numbers")
            lines.append(Line(label, f"{paper_text(better)} vs {paper_text(worse)}", ours, tolerance_text(better),
                              verdict, how))  # fmt: skip
            rated.append(verdict)
            scale = [n for s in (b, w) for n in s.scale(better)]
            result.scaled += [n for n in scale if n not in result.scaled]
            result.evidence += [s for s in (b, w) if s not in result.evidence]
        if rated:
            outcomes[experiment] = (INCONCLUSIVE if INCONCLUSIVE in rated else combine(rated), lines, aside)
        else:
            outcomes.setdefault(experiment, (DID_NOT_TRAIN, [], aside))
    evidence = {e: o for e, o in outcomes.items() if o[0] != DID_NOT_TRAIN}
    if not outcomes:
        entries = [numbers.entries[e] for e in finding.entries]
        measured = [
            e
            for e in entries
            if any(s.value(f"test.{e.metric}") is not None for s in settings_of(records, e.task, e.match))
        ]
        if measured:
            result.reason += " (measured alone: " + ", ".join(e.label for e in measured) + ")"
        return result
    if not evidence:
        result.verdict, result.reason = (
            INCONCLUSIVE,
            f"{DID_NOT_TRAIN}: no run meets the control ({control_text(finding)})",
        )
        return result
    for _, lines, _ in evidence.values():
        result.lines += lines
    kinds = {o[0] for o in evidence.values()}
    if len(kinds) > 1:
        result.verdict = INCONCLUSIVE
        result.reason = "experiments disagree: " + "; ".join(f"`{e}` {o[0]}" for e, o in evidence.items())
    else:
        result.verdict = kinds.pop()
        where = ", ".join(f"`{e}`" for e in evidence)
        outcome = {REPRODUCED: "wins by the paper's margin", DIRECTION_ONLY: "wins, by another margin",
                   NOT_REPRODUCED: "no clear win", INCONCLUSIVE: "settings without validation numbers disagree"}
        if finding.kind == "parity":
            outcome |= {REPRODUCED: "on par within the tolerance", NOT_REPRODUCED: "apart by more than the tolerance"}
        result.reason = outcome[result.verdict] + f" in {where}"  # fmt: skip
    aside = sum(o[2] for o in outcomes.values())
    if aside:
        result.reason += f"; {aside} pair{'s' * (aside != 1)} set aside: {DID_NOT_TRAIN}"
    return result


def _options(pick: Pick) -> list[Setting]:
    return [pick.setting] if pick.setting else pick.candidates
