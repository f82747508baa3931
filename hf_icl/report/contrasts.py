"""Contrasts (`better` beats `worse`) and parities (two models on par): every named pair measured within one
experiment, each side's runs past the finding's control and within the CPU budget, the seeds of the two sides tested
for separation (`separation.py`), and the seed cap applied.
"""

from __future__ import annotations

from .findings import (
    DID_NOT_TRAIN,
    EXPERIMENTS_DISAGREE,
    NOT_SELECTED,
    NOT_SEPARATED,
    OVER_BUDGET,
    PARTLY_MEASURED,
    Assessment,
    Line,
    Pick,
    control_text,
    measured,
    ours_text,
    paper_text,
    seed_cap,
    select,
    tolerance_text,
    trained,
    within_budget,
)
from .papers import (
    DIRECTION_ONLY,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    NOT_RUN,
    REPRODUCED,
    Entry,
    Finding,
    PaperNumbers,
    combine,
    judge_gap,
    judge_parity,
    model_name,
    on_scale,
)
from .runs import RunRecord, Setting
from .separation import MIN_SEEDS, Separation, welch


def signed(entry: Entry, setting: Setting) -> list[float]:
    """Each seed's test number on `entry`'s scale, signed so that larger is better."""
    sign = 1 if entry.better == "higher" else -1
    return [sign * on_scale(entry, v) for v in setting.values(f"test.{entry.metric}")]


def judge_pair(finding: Finding, better: Entry, worse: Entry, b: Setting, w: Setting) -> tuple[str, str, Separation]:
    """(verdict, why, separation) of one pair of settings: the means decide with fewer than `MIN_SEEDS` seeds a side
    (then capped), the separation test decides with more."""
    separation = welch(signed(better, b), signed(worse, w))
    means = (b.value(f"test.{better.metric}", better.statistic), w.value(f"test.{worse.metric}", worse.statistic))
    seeds = min(b.seeds, w.seeds)
    if finding.kind == "parity":
        on_means = judge_parity(better, worse, *means)
        if seeds < MIN_SEEDS:
            return (*seed_cap(on_means, seeds), separation)
        low, high = separation.interval
        if -better.tolerance <= low and high <= better.tolerance:
            return REPRODUCED, "", separation
        if abs(separation.gap) > better.tolerance and separation.separated_either_way:
            return NOT_REPRODUCED, "", separation
        return INCONCLUSIVE, NOT_SEPARATED, separation
    on_means = judge_gap(better, worse, *means)
    if seeds < MIN_SEEDS:
        return (*seed_cap(on_means, seeds), separation)
    if on_means in (REPRODUCED, DIRECTION_ONLY) and not separation.separated:
        return INCONCLUSIVE, NOT_SEPARATED, separation
    return on_means, "", separation


def pair_label(better: Entry, worse: Entry) -> str:
    """Name what differs: the models of one table row, or the rows of one model."""
    if better.row == worse.row:
        return f"{better.column} vs {worse.column} ({better.row})"
    return f"{better.row} vs {worse.row} ({better.column})"


def _side(finding: Finding, entry: Entry, settings: list[Setting], records: list[RunRecord]) -> tuple[list, bool]:
    """(the side's evidence settings, whether they are all over the budget); [] where none trained."""
    kept, _ = trained(finding, entry, settings, records)
    kept, _ = within_budget(kept)
    return kept, bool(kept) and all(s.over_budget for s in kept)


def assess_contrast(finding: Finding, numbers: PaperNumbers, records: list[RunRecord]) -> Assessment:
    """A contrast or a parity, pair by pair and experiment by experiment (see the report's rules)."""
    result = Assessment(finding, NOT_RUN, "no experiment measures both sides")
    outcomes: dict[str, list[str]] = {}  # experiment -> the verdicts of its pairs
    whys: dict[str, list[str]] = {}
    aside = 0
    measurements: list[dict] = []  # one per pair and experiment that measures it with both sides trained
    for better_id, worse_id in finding.pairs:
        better, worse = numbers.entries[better_id], numbers.entries[worse_id]
        label = pair_label(better, worse)
        sides = [measured(e, records) for e in (better, worse)]
        pair = {"a": better_id, "b": worse_id, "measured": False, "verdict": NOT_RUN, "separation": None}
        result.pairs.append(pair)
        for experiment in sorted({s.experiment for s in sides[0]} & {s.experiment for s in sides[1]}):
            here = [[s for s in side if s.experiment == experiment] for side in sides]
            (kept_b, late_b), (kept_w, late_w) = (_side(finding, e, h, records) for e, h in zip((better, worse), here))
            if not kept_b or not kept_w:
                aside += 1
                result.others.append((f"`{experiment}`", label, f"{DID_NOT_TRAIN} (control: {control_text(finding)})"))
                outcomes.setdefault(experiment, [])
                continue
            picks = [select(better, kept_b), select(worse, kept_w)]
            options = [(b, w) for b in _options(picks[0]) for w in _options(picks[1])]
            judged = [judge_pair(finding, better, worse, b, w) for b, w in options]
            found = {(v, why) for v, why, _ in judged}
            verdict, why = found.pop() if len(found) == 1 else (INCONCLUSIVE, NOT_SELECTED)
            if (late_b or late_w) and verdict != INCONCLUSIVE:
                verdict, why = INCONCLUSIVE, OVER_BUDGET
            seeds = min(min(b.seeds for b, _ in options), min(w.seeds for _, w in options))
            measurements.append(dict(pair=pair, better=better, worse=worse, label=label, experiment=experiment,
                                     options=options, judged=judged, verdict=verdict, why=why,
                                     seeds=seeds))  # fmt: skip
    for m in _superseded_set_aside(measurements, result):
        better, worse, experiment, options = m["better"], m["worse"], m["experiment"], m["options"]
        verdict, why = m["verdict"], m["why"]
        b, w = options[0]
        separation = m["judged"][0][2] if len(options) == 1 else None
        one = len(options) == 1
        ours = f"{ours_text(better, b)} vs {ours_text(worse, w)}" if one else f"{len(options)} setting pairs"
        how = f"`{experiment}`" + ("" if one else f", {len(options)} pairs of settings without validation numbers")
        if separation is not None:
            how += f"; {separation.text(parity=finding.kind == 'parity')}"
        shown = verdict + (f" ({why})" if why else "")
        result.lines.append(Line(m["label"], f"{paper_text(better)} vs {paper_text(worse)}", ours,
                                 tolerance_text(better), shown, how, seeds=min(b.seeds, w.seeds),
                                 separation=separation))  # fmt: skip
        outcomes.setdefault(experiment, []).append(verdict)
        whys.setdefault(experiment, []).append(why)
        m["pair"].update(measured=True, verdict=verdict, why=why,
                         separation=separation.as_json() if separation else None)  # fmt: skip
        for entry, setting in ((better, b), (worse, w)):
            model = model_name(entry, better.row != worse.row)
            result.seeds[model] = min(result.seeds.get(model, setting.seeds), setting.seeds)
        result.scaled += [n for s, e in ((b, better), (w, worse)) for n in s.scale(e) if n not in result.scaled]
        result.evidence += [s for s in (b, w) if s not in result.evidence]
    return _conclude(result, numbers, outcomes, whys, aside)


def _superseded_set_aside(measurements: list[dict], result: Assessment) -> list[dict]:
    """The measurements that count: where an experiment measures a pair on `MIN_SEEDS` seeds a side or more, the
    same pair's measurements on fewer seeds in other experiments (pilots, searches) are listed, not counted."""
    kept = []
    for m in measurements:
        full = [o["experiment"] for o in measurements if o["pair"] is m["pair"] and o["seeds"] >= MIN_SEEDS]
        if m["seeds"] < MIN_SEEDS and full:
            seeds = f"{m['seeds']} seed{'s' * (m['seeds'] != 1)} a side"
            result.others.append((f"`{m['experiment']}`", m["label"],
                                  f"superseded: {seeds}, where `{full[0]}` has {MIN_SEEDS} or more"))  # fmt: skip
        else:
            kept.append(m)
    return kept


def _conclude(result: Assessment, numbers: PaperNumbers, outcomes: dict, whys: dict, aside: int) -> Assessment:
    finding = result.finding
    evidence = {e: v for e, v in outcomes.items() if v}
    if not outcomes:
        return result
    if not evidence:
        result.verdict, result.why = INCONCLUSIVE, DID_NOT_TRAIN
        result.reason = f"{DID_NOT_TRAIN}: no run meets the control ({control_text(finding)})"
        return result
    per_experiment = {e: (INCONCLUSIVE if INCONCLUSIVE in v else combine(v)) for e, v in evidence.items()}
    kinds = set(per_experiment.values())
    where = ", ".join(f"`{e}`" for e in evidence)
    all_whys = [w for e in evidence for w in whys[e] if w]
    if len(kinds) > 1:
        result.verdict, result.why = INCONCLUSIVE, EXPERIMENTS_DISAGREE
        result.reason = f"{EXPERIMENTS_DISAGREE}: " + "; ".join(f"`{e}` {v}" for e, v in per_experiment.items())
    else:
        result.verdict = kinds.pop()
        outcome = {REPRODUCED: "wins by the paper's margin", DIRECTION_ONLY: "wins, by another margin",
                   NOT_REPRODUCED: "no clear win", INCONCLUSIVE: "not decided"}  # fmt: skip
        if finding.kind == "parity":
            outcome |= {REPRODUCED: "on par within the tolerance", DIRECTION_ONLY: "on par on the means",
                        NOT_REPRODUCED: "apart by more than the tolerance"}  # fmt: skip
        result.reason = outcome[result.verdict] + f" in {where}"
        if result.verdict == INCONCLUSIVE:
            result.why = next(w for w in (*_WHY_ORDER, *all_whys) if w in all_whys)
            result.reason = f"{result.why}: " + "; ".join(
                f"{line.label} {line.verdict}" for line in result.lines if line.verdict.startswith(INCONCLUSIVE)
            )
        elif result.verdict == DIRECTION_ONLY and any(w.endswith(("seed", "seeds")) for w in all_whys):
            fewest = min(line.seeds for line in result.lines)
            result.why = f"{fewest} seed{'s' * (fewest != 1)}"
            result.reason += f"; capped at direction only: {fewest} seed{'s' * (fewest != 1)}, {MIN_SEEDS} needed"
    missing = [pair for pair in result.pairs if not pair["measured"]]
    if missing and result.verdict != NOT_RUN:
        names = ", ".join(pair_label(numbers.entries[pair["a"]], numbers.entries[pair["b"]]) for pair in missing)
        k, n = len(result.pairs) - len(missing), len(result.pairs)
        result.verdict, result.why = INCONCLUSIVE, PARTLY_MEASURED
        result.reason = f"{PARTLY_MEASURED} ({k} of {n} pairs): missing {names}; measured: {result.reason}"
    if aside:
        result.reason += f"; {aside} pair{'s' * (aside != 1)} set aside: {DID_NOT_TRAIN}"
    return result


_WHY_ORDER = (OVER_BUDGET, NOT_SEPARATED, NOT_SELECTED)


def _options(pick: Pick) -> list[Setting]:
    return [pick.setting] if pick.setting else pick.candidates
