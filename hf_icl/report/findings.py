"""One verdict per finding: which runs count as evidence, which setting is selected, and what the paper's claim gets.

Rules (the report prints them):

- **Selection on validation.** Where several settings could answer for a number, the one with the best validation
  score is selected and its *test* number reported; settings whose validation scores are within the number's
  tolerance of the best are tied, and the tie goes to the one with the most seeds (a one-seed search point at chance
  does not displace a seeded setting at chance). Settings without validation numbers are never selected on test:
  if they all lead to the same verdict, that verdict stands and no single setting is named; if they disagree, the
  verdict is **inconclusive: not selected** and every setting is listed.
- **The paper's setting first.** A run below the paper's setting (fewer key–value pairs, dimensions, training
  lengths, steps, a smaller model, another corpus) is **scaled**; the verdict names its scale and is never counted as
  the paper's setting. Runs at the paper's setting are preferred where there are any, and of runs of one model (same
  architecture and parameter count) only the longest-trained counts (most training sequences, steps × batch size):
  the budget is fixed before any result is seen. Seeds come before length: a setting with 3 seeds is not displaced
  by a longer one with fewer (which could only give a capped verdict), so the longest of the best-seeded counts.
- **Failure findings need a control.** A claim that a model fails (X fails, X ≫ Y) counts a run only if the failing
  model learned the in-range task in it, or the contrasting model succeeded in the same experiment. Runs that meet
  neither did not train; if no run is left the verdict is **inconclusive: did not train**. A claim that two models are
  on par needs one of them to have learned in that experiment (two models that learned nothing tie).
- **Seeds.** A setting's seeds give mean ± sd (the best seed where the paper reports its best), with the tolerance
  printed beside it. A value finding judges the mean under the same seed rule as every other kind: with fewer than
  3 seeds a number within its tolerance is capped at direction only, and one outside it is inconclusive (too few
  seeds); contrasts, parities and outcomes follow the seed and separation rules below.
- **One evidence pool.** A run that never met its finding's control never defines a number: the control filters the
  runs before the longest-trained one is chosen. A run over the CPU budget (30 minutes on its own cores) is shown but
  never the evidence where a run within the budget measures the same; where only runs over the budget measure a
  finding, it is **inconclusive: over budget**. The rule is the same for every paper.
- **Counted once.** Each finding and each published number gets one verdict, however many experiments measure it;
  a contrast is judged within one experiment (same budget and data), and experiments that disagree make it
  inconclusive. Where an experiment measures a pair on 3 seeds a side or more, the same pair's measurements on fewer
  seeds (a search's single point, a pilot) are listed as superseded, not counted: they neither cap nor contradict it.
- **A claim about several numbers needs them all.** Where some of a finding's numbers are measured and agree with the
  paper but others were never measured, the claim is not shown: **inconclusive: partly measured** (numbers that
  disagree with the paper still refute it). A contrast that names several models or pairs is ✔ or ✘ only when every
  named pair is measured with its control; otherwise it is **inconclusive: partly measured (k of n pairs)**, and the
  reason names the missing pairs.
- **One claim, one finding.** A criterion the project defines sits beside the paper's number as the same finding's
  reason, never as a second finding; each published number's line comes from the finding it belongs to (a value
  finding before an outcome), so the "every published number" tables never contradict a finding.
- **Criteria that can fail.** Every outcome criterion of a finding that expects success is evaluated on trivial
  predictors (`trivial.py`: predicting 0, the mean of the context's targets) on the selected runs' own task; a
  criterion a trivial predictor passes is refused when the report builds.
"""

from __future__ import annotations

import math
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
    judge_value,
    meets,
    on_scale,
    rule_text,
)
from .runs import CPU_BUDGET_MINUTES, RunRecord, Setting, settings_of
from .separation import MIN_SEEDS, Separation

NOT_SELECTED, DID_NOT_TRAIN, PARTLY_MEASURED = "not selected", "did not train", "partly measured"
TOO_FEW_SEEDS, SPLIT_SEEDS, NOT_SEPARATED, OVER_BUDGET = "too few seeds", "split seeds", "not separated", "over budget"
EXPERIMENTS_DISAGREE = "experiments disagree"
WHY = (DID_NOT_TRAIN, PARTLY_MEASURED, SPLIT_SEEDS, TOO_FEW_SEEDS, NOT_SEPARATED, OVER_BUDGET, NOT_SELECTED,
       EXPERIMENTS_DISAGREE)  # fmt: skip
"""The kinds of *inconclusive*, as the verdict names them."""


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
    seeds: int = 0  # the fewest seeds on a side of this line
    separation: Separation | None = None
    setting: Setting | None = None  # the selected setting of a number (not of a pair)
    spread: float = 0.0  # the sd over that setting's seeds of the number shown (0: one seed, or its best seed shown)


@dataclass
class Assessment:
    finding: Finding
    verdict: str
    reason: str
    scaled: list[tuple] = field(default_factory=list)  # (label, ours, paper) per dimension, see `runs.scale_text`
    lines: list[Line] = field(default_factory=list)
    others: list[tuple[str, str, str]] = field(default_factory=list)  # (where, ours, why it is not the evidence)
    evidence: list[Setting] = field(default_factory=list)
    why: str = ""  # the kind of inconclusive (one of WHY), or the seed cap of a direction-only ("1 seed")
    seeds: dict[str, int] = field(default_factory=dict)  # model (entry row) -> seeds of the setting used
    pairs: list[dict] = field(default_factory=list)  # contrasts: {a, b, measured, verdict, separation}
    attempts: list = field(default_factory=list)  # `attempts.Attempt` per model, where a run did not train


@dataclass
class Pick:
    """The outcome of a selection: one setting, or none (the candidates listed instead)."""

    setting: Setting | None
    how: str
    candidates: list[Setting]
    superseded: list[Setting] = field(default_factory=list)  # runs of a model that also ran longer or on more seeds


def fmt(entry: Entry, value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.3g}" if entry.scale == "log" else f"{value:.3f}"


def seed_cap(verdict: str, seeds: int) -> tuple[str, str]:
    """(verdict, why) under the seed rule: with fewer than `MIN_SEEDS` seeds, a result the paper's way is capped at
    direction only ("n seeds"), one the other way is inconclusive (too few seeds)."""
    if seeds >= MIN_SEEDS or verdict not in (REPRODUCED, DIRECTION_ONLY, NOT_REPRODUCED):
        return verdict, ""
    if verdict == NOT_REPRODUCED:
        return INCONCLUSIVE, TOO_FEW_SEEDS
    return DIRECTION_ONLY, f"{seeds} seed{'s' * (seeds != 1)}"


def within_budget(settings: list[Setting]) -> tuple[list[Setting], list[Setting]]:
    """(the evidence pool, the runs set aside as over the CPU budget): over-budget settings leave the pool where a
    setting within the budget is left; where none is, they stay (and the finding is inconclusive: over budget)."""
    within = [s for s in settings if not s.over_budget]
    return (within, [s for s in settings if s.over_budget]) if within else (settings, [])


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
        best, top = (max if better == "higher" else min)(scored, key=lambda sv: sv[1])
        if entry.scale != "log":  # validation scores within the tolerance of the best tie: the most seeds win
            near = [(s, v) for s, v in scored if abs(v - top) <= entry.tolerance]
            best = max(near, key=lambda sv: (len(sv[0].runs), sv[1] if better == "higher" else -sv[1]))[0]
        rest = len(pool) - len(scored)
        how = f"best validation {metric.split('.')[-1]} of {len(scored)} settings" if len(scored) > 1 else "one setting"
        return Pick(best, how + (f"; {rest} without validation numbers not considered" if rest else ""), pool, shorter)
    if len(pool) == 1:
        return Pick(pool[0], "the only setting", pool, shorter)
    return Pick(None, NOT_SELECTED, pool, shorter)


def validation_scores(settings: list[Setting], metric: str, statistic: str) -> list[tuple[Setting, float]]:
    """`(setting, its validation value of metric)` for the settings that have one."""
    scored = [(s, s.value(f"validation.{metric}", statistic)) for s in settings]
    return [(s, v) for s, v in scored if v is not None and not math.isnan(v)]  # NaN: a metric with no rows there


def longest(settings: list[Setting]) -> list[Setting]:
    """Of settings of one model (task, architecture, parameter count), those that trained as long as the longest of
    its best-seeded settings (most seeds, up to `MIN_SEEDS`): shorter runs are dropped, and so are longer runs on fewer
    seeds, which could only give a capped verdict. Settings of that length on fewer seeds (another learning rate, a
    search point) stay for the selection on validation."""
    reference = _reference_ranks(settings)
    return [s for s in settings if s.training_sequences == reference[s.model_key][1]]


def _rank(setting: Setting) -> tuple[int, float]:
    """Seeds first (no more than a verdict needs), then how much the model trained."""
    return min(len(setting.runs), MIN_SEEDS), setting.training_sequences


def _reference_ranks(settings: list[Setting]) -> dict[tuple, tuple[int, float]]:
    """Per model, the (seeds, training sequences) of its best-seeded, longest-trained setting."""
    reference: dict[tuple, tuple[int, float]] = {}
    for s in settings:
        reference[s.model_key] = max(reference.get(s.model_key, (0, 0.0)), _rank(s))
    return reference


def _superseded_why(setting: Setting, reference: dict[tuple, tuple[int, float]]) -> str:
    """Why a run of a model that also ran otherwise is not the evidence: the kept one (`reference`, per model, from
    `_reference_ranks`) trained longer, or has the seeds a verdict needs."""
    seeds, length = reference.get(setting.model_key, (0, 0.0))
    if setting.training_sequences > length:
        return f"a run of the same model on {seeds} seeds counts instead"
    return "a longer run of the same model counts instead"


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


def measured(entry: Entry, records: list[RunRecord]) -> list[Setting]:
    """The settings whose every seed has `entry`'s test number."""
    return [s for s in settings_of(records, entry.task, entry.match) if s.value(f"test.{entry.metric}") is not None]


def trained(finding: Finding, entry: Entry, settings: list[Setting], records: list[RunRecord]) -> tuple[list, list]:
    """(settings meeting the finding's control, those that did not train)."""
    kept = [s for s in settings if passes_control(finding, s, records, entry.task)]
    return kept, [s for s in settings if s not in kept]


def _candidates(finding: Finding, entry: Entry, records: list[RunRecord]) -> tuple[list[Setting], list[Setting]]:
    """(evidence, set aside) among the settings matching `entry`: set aside are those failing the control."""
    return trained(finding, entry, measured(entry, records), records)


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


def seed_outcomes(finding: Finding, setting: Setting) -> list[tuple[float | None, bool]]:
    """(criterion value, succeeds) of each seed of `setting`."""
    found = []
    for run in setting.runs:
        value = criterion_value(finding.criterion, Setting(setting.experiment, [run]))
        found.append((value, value is not None and meets(finding.criterion, value)))
    return found


def _outcome(finding: Finding, entry: Entry, setting: Setting) -> str:
    seeds = seed_outcomes(finding, setting)
    wins = sum(ok for _, ok in seeds)
    values = ", ".join(fmt(entry, v) for v, _ in seeds)
    if len(seeds) == 1:
        return f"{'succeeds' if wins else 'fails'} ({values})"
    outcome = "succeed" if wins == len(seeds) else "fail" if not wins else "split"
    return f"{wins} of {len(seeds)} seeds succeed: {outcome} ({values})"


def _rate(finding: Finding, entry: Entry, setting: Setting) -> str:
    return _rated(finding, entry, setting)[0]


def _rated(finding: Finding, entry: Entry, setting: Setting) -> tuple[str, str]:
    """(verdict, why) of one setting: an outcome is judged seed by seed (a split is inconclusive), a value on its mean
    (statistic); both are capped by the seed rule."""
    if finding.kind != "outcome":
        return seed_cap(judge_value(entry, setting.value(f"test.{entry.metric}", entry.statistic)), setting.seeds)
    seeds = seed_outcomes(finding, setting)
    wins = sum(ok for _, ok in seeds)
    if 0 < wins < len(seeds):
        return INCONCLUSIVE, f"{SPLIT_SEEDS} ({wins} of {len(seeds)} succeed)"
    verdict = REPRODUCED if ("succeeds" if wins else "fails") == finding.expect else NOT_REPRODUCED
    return seed_cap(verdict, len(seeds))


def assess_numbers(finding: Finding, numbers: PaperNumbers, records: list[RunRecord]) -> Assessment:
    """The verdict on a value or outcome finding (see the module docstring; contrasts: `contrasts.py`)."""
    result = Assessment(finding, NOT_RUN, "no run measures it")
    verdicts, reasons, whys, groups = [], [], [], {}
    for entry_id in finding.entries:  # numbers of one model (same task and match) share one selected setting
        entry = numbers.entries[entry_id]
        groups.setdefault((entry.task, repr(sorted(entry.match.items()))), []).append(entry)
    for entries in groups.values():
        lead = entries[0]
        kept, aside = _candidates(finding, lead, records)
        for s in aside:
            result.others.append((s.where, ours_text(lead, s), f"{DID_NOT_TRAIN} (control: {control_text(finding)})"))
        kept, late = within_budget(kept)
        for s in late:
            result.others.append((s.where, ours_text(lead, s), f"{OVER_BUDGET}: a run within the budget counts"))
        metric = finding.criterion["metric"] if finding.kind == "outcome" else lead.metric
        better = ("higher" if "at_least" in finding.criterion else "lower") if finding.kind == "outcome" else None
        pick = select(lead, kept, metric, better)
        if pick.setting is None and not pick.candidates:
            verdicts.append(INCONCLUSIVE if aside else NOT_RUN)
            reasons.append(f"{lead.row}: {DID_NOT_TRAIN}" if aside else f"{lead.row}: not run")
            whys.append(DID_NOT_TRAIN if aside else "")
            continue
        chosen = [pick.setting] if pick.setting else pick.candidates
        result.seeds[lead.row] = min(s.seeds for s in chosen)
        for entry in entries:
            rated = {_rated(finding, entry, s) for s in chosen}
            verdict, why = rated.pop() if len(rated) == 1 else (INCONCLUSIVE, NOT_SELECTED)
            if pick.setting is None:
                split = Counter(_rate(finding, entry, s) for s in chosen)
                agreement = "agree" if verdict != INCONCLUSIVE or why != NOT_SELECTED else "disagree: not selected"
                how = f"{len(chosen)} settings without validation numbers {agreement}"
                if why == NOT_SELECTED:
                    parts = ", ".join(f"{n} {v}" for v, n in sorted(split.items()))
                    reasons.append(f"{entry.label}: {len(chosen)} settings without validation numbers disagree "
                                   f"({parts}): not selected")  # fmt: skip
            else:
                how = f"{pick.setting.where}: {pick.how}"
            if verdict == INCONCLUSIVE and why != NOT_SELECTED:
                reasons.append(f"{entry.label}: {why}")
            if all(s.over_budget for s in chosen) and verdict != INCONCLUSIVE:
                verdict, why = INCONCLUSIVE, OVER_BUDGET
                reasons.append(f"{entry.label}: {OVER_BUDGET} (only runs over {CPU_BUDGET_MINUTES} CPU minutes)")
            ours = ours_text(entry, pick.setting) if pick.setting else _range(entry, chosen)
            if finding.kind == "outcome":
                ours = _outcome(finding, entry, pick.setting) if pick.setting else ours
            elif pick.setting is not None and _edge(entry, pick.setting):
                how += "; at the tolerance edge with one seed"
            same = {s.value(f"test.{entry.metric}", entry.statistic) for s in chosen}
            shown = pick.setting or (chosen[0] if len(same) == 1 else None)  # settings that all measured one value
            result.lines.append(Line(entry.label, paper_text(entry), ours, tolerance_text(entry), verdict, how,
                                     _pair(entry, shown), seeds=result.seeds[lead.row], setting=pick.setting,
                                     spread=spread_shown(entry, pick.setting)))  # fmt: skip
            verdicts.append(verdict)
            whys.append(why)
        kept_values, reference = {ours_text(lead, s) for s in chosen}, _reference_ranks(pick.candidates)
        for s in pick.superseded:  # listed where it would have told another story
            if ours_text(lead, s) not in kept_values:
                result.others.append((s.where, ours_text(lead, s), _superseded_why(s, reference)))
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
    return _conclude(result, verdicts, reasons, whys)


def _edge(entry: Entry, setting: Setting) -> bool:
    """One seed, and within a tenth of the tolerance of its edge: the verdict could flip with another seed."""
    if len(setting.runs) > 1 or not isinstance(entry.value, (int, float)):
        return False
    delta = abs(on_scale(entry, setting.value(f"test.{entry.metric}")) - on_scale(entry, entry.value))
    return abs(delta - entry.tolerance) <= 0.1 * entry.tolerance


def _range(entry: Entry, settings: list[Setting]) -> str:
    values = sorted(v for s in settings if (v := s.value(f"test.{entry.metric}", entry.statistic)) is not None)
    return fmt(entry, values[0]) if values[0] == values[-1] else f"{fmt(entry, values[0])} – {fmt(entry, values[-1])}"


def spread_shown(entry: Entry, setting: Setting | None) -> float:
    """The sd over the setting's seeds of the number its line shows: 0 for one seed, for no setting, and where the
    line shows the best seed (`statistic: max`) rather than the mean."""
    if setting is None or entry.statistic == "max":
        return 0.0
    return setting.spread(f"test.{entry.metric}") or 0.0


def _pair(entry: Entry, setting: Setting | None) -> tuple:
    if setting is None or not isinstance(entry.value, (int, float)):
        return ()
    return (entry.value, setting.value(f"test.{entry.metric}", entry.statistic))


def _conclude(result: Assessment, verdicts: list[str], reasons: list[str], whys: list[str]) -> Assessment:
    measured = [v for v in verdicts if v != NOT_RUN]
    if not measured:
        result.verdict, result.reason = NOT_RUN, "no run measures it"
    elif INCONCLUSIVE in measured:
        result.verdict = INCONCLUSIVE
        result.reason = "; ".join(reasons)
        result.why = next((w for w in WHY if any(why.startswith(w) for why in whys)), "")
    else:
        result.verdict = combine(measured)
        missing = len(verdicts) - len(measured)
        result.reason = _reason(result) + (f"; {missing} of {len(verdicts)} numbers not measured" if missing else "")
        if missing and result.verdict in (REPRODUCED, DIRECTION_ONLY):  # what was measured agrees, the rest is unknown
            result.verdict, result.reason = INCONCLUSIVE, f"{PARTLY_MEASURED}: {result.reason}"
            result.why = PARTLY_MEASURED
        elif result.verdict == DIRECTION_ONLY and any(w.endswith(("seed", "seeds")) for w in whys):
            fewest = min(result.seeds.values())
            result.why = f"{fewest} seed{'s' * (fewest != 1)}"
            result.reason += f"; capped at direction only: {fewest} seed{'s' * (fewest != 1)}, {MIN_SEEDS} needed"
    if result.finding.kind == "value" and result.verdict != NOT_RUN and 1 in result.seeds.values():
        one = [model for model, n in result.seeds.items() if n == 1]
        result.reason += f" (one seed: {', '.join(one)})"
    if result.verdict == INCONCLUSIVE and any(DID_NOT_TRAIN in r for r in reasons) and result.why == DID_NOT_TRAIN:
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


WOULD_CHANGE = {
    DID_NOT_TRAIN: "a recipe under which the models meet the control (a committed search), then 3 seeds per side",
    PARTLY_MEASURED: "runs of the models and pairs not yet measured, 3 seeds each, with their control",
    SPLIT_SEEDS: "what makes the failing seed fail (initialisation, data order, schedule), then 3 seeds that agree",
    NOT_SEPARATED: "more seeds per side, or a gap that separates the seeds (Welch p < 0.05)",
    OVER_BUDGET: "a run of the same model within the 30-minute CPU budget",
    NOT_SELECTED: "validation numbers for the settings, so that one is selected on validation",
    EXPERIMENTS_DISAGREE: "an experiment that settles it, or the disagreeing ones rerun with 3 seeds",
}
"""What evidence would move an inconclusive verdict, by the kind of inconclusive."""


def what_would_change(assessment: Assessment) -> str:
    """What evidence would move the verdict, from the rule that decided it."""
    if assessment.verdict == NOT_RUN:
        return "a run of the finding's models at any scale"
    if assessment.why in WOULD_CHANGE:
        return WOULD_CHANGE[assessment.why]
    more = MIN_SEEDS - min(assessment.seeds.values(), default=MIN_SEEDS)
    if more > 0:
        return f"{more} more seed{'s' * (more != 1)} per side ({MIN_SEEDS} in all)"
    if assessment.verdict == REPRODUCED:
        return "a run at the paper's setting, or seeds that reverse the gap"
    return "a different recipe found by a committed search (the verdict rests on the selected setting)"
