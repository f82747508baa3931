"""The reproduction report: a summary (`REPORT`), one page per paper (`P1` … `P5`: the paper's numbers beside ours,
figures inline, each finding's verdict and its reason) and the runs (`runs`), each as Markdown and HTML."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..block_features.feature_registry import features_label  # noqa: E402
from ..utils.atomic_files import atomic_path, write_text_atomic  # noqa: E402
from . import findings as rules  # noqa: E402
from . import number_table  # noqa: E402
from .assess import assess  # noqa: E402
from .attempts import attempts_rows  # noqa: E402
from .document import Document  # noqa: E402
from .findings import (  # noqa: E402
    Assessment,
    Line,
    fmt,
    ours_text,
    paper_text,
    select,
    spread_shown,
    tolerance_text,
    what_would_change,
)
from .findings_json import VERDICT_KEYS, findings_text, verdict_counts  # noqa: E402
from .papers import (  # noqa: E402
    MARKS,
    VERDICTS,
    Finding,
    PaperNumbers,
    judge_value,
    load_paper_numbers,
)
from .papers import __doc__ as ENTITIES  # noqa: E402
from .runs import (  # noqa: E402
    CPU_BUDGET_MINUTES,
    RunRecord,
    budget_minutes,
    find_runs,
    is_over_budget,
    scale_text,
)
from .runs import __doc__ as GROUPING  # noqa: E402
from .separation import __doc__ as SEPARATION  # noqa: E402
from .studies import Study, find_studies  # noqa: E402
from .sweep_page import sweep_summary  # noqa: E402
from .trivial import vacuous  # noqa: E402

FIGURES = "report_figures"
HEADLINE_START, HEADLINE_END = "<!-- headline findings: start -->", "<!-- headline findings: end -->"


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower()


def mark(assessment: Assessment) -> str:
    scaled = f", scaled ({scale_text(assessment.scaled)})" if assessment.scaled else ""
    why = ""
    if assessment.verdict == rules.INCONCLUSIVE and assessment.why:
        why = f": {assessment.why}"
    elif assessment.verdict == rules.DIRECTION_ONLY and assessment.why:
        why = f" ({assessment.why})"
    return f"{MARKS[assessment.verdict]} {assessment.verdict}{why}{scaled}"


def seeds_text(assessment: Assessment) -> str:
    """The seeds a verdict rests on: `n` where every model has n, else `model n, ...`."""
    counts = assessment.seeds
    if not counts:
        return "–"
    if len(set(counts.values())) == 1:
        return str(next(iter(counts.values())))
    return ", ".join(f"{model} {n}" for model, n in counts.items())


def separation_text(assessment: Assessment) -> str:
    """The weakest separation among the verdict's pairs (largest one-sided p), or – where none applies."""
    tests = [line.separation for line in assessment.lines if line.separation is not None]
    if not tests:
        return "–"
    parity = assessment.finding.kind == "parity"
    worst = max(tests, key=lambda t: max(abs(t.interval[0]), abs(t.interval[1])) if parity else t.p_value)
    return worst.text(parity) + (f" (weakest of {len(tests)} pairs)" if len(tests) > 1 else "")


def has_curves(record: RunRecord) -> bool:
    test = record.metrics["test"]
    return isinstance(test.get("per_length"), dict) or (
        isinstance(test.get("curves"), dict) and isinstance(test["curves"].get("model"), list)
    )


def curve_figure(path: Path, records: list[RunRecord], title: str, draw: bool = True) -> bool:
    """Accuracy by test length, or error by number of in-context examples, of `records`; False if they have none
    (with `draw=False` only whether there is one)."""
    if not draw:
        return any(map(has_curves, records))
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    drawn = False
    for r in records:
        test = r.metrics["test"]
        if isinstance(test.get("per_length"), dict):
            points = sorted((int(k), v) for k, v in test["per_length"].items())
            ax.plot([p for p, _ in points], [v for _, v in points], label=f"{r.experiment}/{r.name}", lw=1)
            ax.set(xlabel="test length", ylabel="accuracy")
            if test.get("train_max_length"):
                ax.axvline(test["train_max_length"], color="grey", ls=":", lw=1)
            drawn = True
        elif isinstance(test.get("curves"), dict) and isinstance(test["curves"].get("model"), list):
            ax.plot(range(1, len(test["curves"]["model"]) + 1), test["curves"]["model"], label=r.name, lw=1)
            ax.set(xlabel="in-context examples", ylabel="model score by example")
            drawn = True
    if drawn:
        ax.set_title(title)
        ax.legend(fontsize=7)
        fig.tight_layout()
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=80)
    plt.close(fig)
    return drawn


def over_budget(records: list[RunRecord]) -> list[RunRecord]:
    """The runs over the budget (:func:`is_over_budget`), by experiment and name."""
    return sorted(filter(is_over_budget, records), key=lambda r: (r.experiment, r.name))


def run_table(records: list[RunRecord]) -> tuple[list[str], list[list]]:
    keys = list(dict.fromkeys(k for r in records for k, v in r.metrics["test"].get("model", {}).items()
                              if isinstance(v, (int, float))))  # fmt: skip
    header = ["run", "task", "architecture", "preset", "parameters", "steps", "seed", "threads", "CPU min", "host",
              "validation", *keys]  # fmt: skip
    rows = []
    for r in sorted(records, key=lambda r: r.name):
        m, train, model = r.metrics, r.metrics.get("train", {}), r.metrics["test"].get("model", {})
        cells = [f"{model[k]:.4g}" if k in model else "–" for k in keys]
        heads = features_label(m.get("run_config", {}).get("overrides"))
        cpu = train.get("cpu_time_s")
        minutes = f"{cpu / 60:.1f}" if isinstance(cpu, (int, float)) else "–"
        if is_over_budget(r):
            minutes += " (over)"
        rows.append([f"`{r.name}`", m.get("task"), f"{m.get('architecture')}{heads}", m.get("preset"),
                     f"{m.get('num_parameters', 0):,}", train.get("steps"), r.seed,
                     m.get("run_config", {}).get("threads", "–"), minutes, host_label(m.get("machine")),
                     "yes" if "validation" in m else "no", *cells])  # fmt: skip
    return header, rows


def host_label(machine: dict | None) -> str:
    """The runs table's host cell: the CPU model as recorded (`metrics.json["machine"]`), "–" for runs from before
    the host was recorded."""
    if not machine or not machine.get("cpu_model"):
        return "–"
    details = [f"family {machine['cpu_family']}"] if machine.get("cpu_family") is not None else []
    details += [name for name, key in (("AVX-512", "avx512"), ("AMX", "amx")) if machine.get(key)]
    return machine["cpu_model"] + (f" ({', '.join(details)})" if details else "")


def number_lines(numbers: PaperNumbers, assessments: list[Assessment], records: list[RunRecord]) -> dict[str, Line]:
    """One line per measured published number, from one source: the value finding it belongs to, else the outcome
    finding, else selected on its own from the runs that meet the control of every finding naming it (so an
    untrained run never defines a number) and within the CPU budget where a run within it measures the number."""
    lines: dict[str, Line] = {}
    for kind in ("value", "outcome"):  # a value finding's line first: an outcome never overwrites it
        for a in assessments:
            if a.finding.kind == kind and len(a.lines) == len(a.finding.entries):
                for entry_id, line in zip(a.finding.entries, a.lines):
                    lines.setdefault(entry_id, line)
    controls = {}
    for finding in numbers.findings:
        for entry_id in finding.entries:
            controls.setdefault(entry_id, []).append(finding)
    for entry in numbers.entries.values():
        if entry.id in lines or not isinstance(entry.value, (int, float)):
            continue
        found = rules.measured(entry, records)
        for finding in controls.get(entry.id, []):
            found = rules.trained(finding, entry, found, records)[0]
        found = rules.within_budget(found)[0]
        if not found:
            continue
        pick = select(entry, found)
        chosen = [pick.setting] if pick.setting else pick.candidates
        verdicts = {judge_value(entry, s.value(f"test.{entry.metric}", entry.statistic)) for s in chosen}
        verdict = verdicts.pop() if len(verdicts) == 1 else rules.INCONCLUSIVE
        ours = ours_text(entry, pick.setting) if pick.setting else f"{len(chosen)} settings"
        where = pick.setting.where if pick.setting else f"{len(chosen)} settings without validation numbers"
        pair = (entry.value, pick.setting.value(f"test.{entry.metric}", entry.statistic)) if pick.setting else ()
        lines[entry.id] = Line(entry.label, paper_text(entry), ours, tolerance_text(entry), verdict, where, pair,
                               setting=pick.setting, spread=spread_shown(entry, pick.setting))
    return lines


def paper_page(paper: str, numbers: PaperNumbers, assessments: list[Assessment], lines: dict[str, Line],
               records: list[RunRecord], output_dir: Path, draw: bool = True) -> Document:  # fmt: skip
    info = numbers.papers[paper]
    doc = Document()
    doc.heading(1, f"{paper}: {info.title}")
    link = f" [{info.link}]({info.link})" if info.link else ""
    doc.paragraph(f"{info.citation}{link}")
    mine = [a for a in assessments if a.finding.paper == paper]
    doc.table(["finding", "verdict", "seeds", "separation"],
              [[f"[{a.finding.claim}](#{a.finding.id})", mark(a), seeds_text(a), separation_text(a)]
               for a in mine])  # fmt: skip
    for a in mine:
        doc.heading(2, a.finding.claim, anchor=a.finding.id)
        doc.paragraph(f"**Verdict: {mark(a)}.** {a.reason[0].upper() + a.reason[1:]}. Seeds: {seeds_text(a)}. "
                      f"What would change the verdict: {what_would_change(a)}.")  # fmt: skip
        if a.lines:
            doc.table(["number", "paper", "ours", "tolerance", "verdict", "run"],
                      [[l.label, l.paper, l.ours, l.tolerance, l.verdict, l.where] for l in a.lines])  # fmt: skip
        if a.others:
            doc.paragraph("Runs measured but not the evidence:")
            doc.table(["run", "ours", "why"], [list(row) for row in a.others])
        if a.attempts:
            doc.paragraph(f"What was tried (the control: {a.attempts[0].control}; every committed setting of each "
                          "model, searches included):")  # fmt: skip
            doc.table(["model", "settings", "experiments", "best control value", "its run"], attempts_rows(a.attempts))
        evidence = [r for s in a.evidence for r in s.runs]
        figure = f"{FIGURES}/{slug(a.finding.id)}.png"
        if evidence and curve_figure(output_dir / figure, evidence, a.finding.claim[:70], draw):
            doc.image(figure, f"{a.finding.id}: the selected runs")
    doc.heading(2, "Every published number", anchor="numbers")
    for source in (s for s in numbers.sources if s["paper"] == paper):
        entries = [e for e in numbers.entries.values() if e.source == source["id"]]
        measured = [e for e in entries if e.id in lines]
        doc.heading(3, source["where"])
        if not measured:
            doc.paragraph(f"No run measures its {len(entries)} numbers yet.")
            continue
        rows = [lines[e.id] for e in measured]
        doc.table(number_table.HEADER, number_table.table_rows(rows))
        if len(measured) < len(entries):
            doc.paragraph(f"{len(entries) - len(measured)} of its {len(entries)} numbers are not measured yet.")
        if any(line.values for line in rows):
            figure = f"{FIGURES}/{source['id']}.png"
            log = any(e.scale == "log" for e in measured)
            number_table.bar_figure(output_dir / figure, rows, log, f"{paper} {source['where'].split(',')[0]}", draw)
            doc.image(figure, f"{source['where'].split(',')[0]}: paper and ours (error bars: sd over seeds)")
    return doc


def summary_rows(numbers: PaperNumbers, objects: list[dict], lines: dict[str, Line]) -> list[list]:
    """One row per paper, counted from `findings.json`'s objects."""
    rows = []
    for paper in numbers.papers:
        mine = [o for o in objects if o["paper"] == paper]
        counts = verdict_counts(objects, paper)
        published = [e for e in numbers.entries.values() if e.paper == paper]
        rows.append([f"[{paper}]({paper}.md)", len(mine), *(counts[VERDICT_KEYS[v]] for v in VERDICTS),
                     sum(o["scaled"] is not None for o in mine if o["verdict"] != "not_run"),
                     f"{sum(e.id in lines for e in published)} / {len(published)}"])  # fmt: skip
    return rows


def counts_sentence(objects: list[dict]) -> str:
    """`N findings (findings.json): a ✔ reproduced, ...`, the counts the README and REPORT.md print."""
    counts = verdict_counts(objects)
    parts = ", ".join(f"{counts[VERDICT_KEYS[v]]} {MARKS[v]} {v}" for v in VERDICTS)
    return f"{len(objects)} findings ([findings.json]({{prefix}}findings.json)): {parts}."


SUMMARY_HEADER = ["paper", "findings", *(f"{MARKS[v]} {v}" for v in VERDICTS), "of them scaled", "numbers measured"]


def headline_table(numbers: PaperNumbers, assessments: list[Assessment], prefix: str, objects: list[dict]) -> str:
    """The README's block: the counts from `findings.json`, then one row per finding (paper, finding, verdict, seeds,
    separation, link)."""
    doc = Document()
    doc.paragraph(counts_sentence(objects).replace("{prefix}", prefix))
    doc.table(["paper", "finding", "verdict", "seeds", "separation", ""],
              [[a.finding.paper, a.finding.claim, mark(a), seeds_text(a), separation_text(a),
                f"[details]({prefix}{a.finding.paper}.md#{a.finding.id})"] for a in assessments])  # fmt: skip
    return doc.to_markdown()


def build_report(run_paths: list, output_dir: str | Path, command: str, numbers: PaperNumbers | None = None,
                 readme: str | Path | None = None, place: Path | None = None,
                 readme_place: Path | None = None, draw: bool = True, papers: bool = True) -> dict:  # fmt: skip
    """Write `REPORT`, `P1` … `P5` and `runs` (`.md` and `.html`) and `report_figures/*.png` to `output_dir`; with
    `papers=False` (one's own sweep), `REPORT` is the settings' mean ± sd over seeds (`sweep_page.py`) and `runs`.

    Args:
        run_paths: run folders, or folders holding run folders at any depth.
        output_dir: where the report goes.
        command: the command that regenerates it (printed at the top).
        numbers: the papers' numbers and findings (default: the shipped `paper_numbers.yaml`).
        readme: a Markdown file whose block between the headline markers is replaced by the findings table.
        place, readme_place: where the pages and the README will live, if elsewhere (`--check` builds in a
            temporary folder): the links of `findings.json` and the README's block are relative to them.
        draw: whether to draw the figures (`--check` compares the pages only).
        papers: rate the papers' findings (pages `P1` … `P5`, `findings.json`, the README block).

    Returns:
        `{"runs": n, "<paper>": {verdict: findings}}`.
    """
    numbers = numbers or load_paper_numbers()
    output_dir = Path(output_dir)
    records = find_runs(run_paths)
    studies = find_studies(run_paths)  # read (and checked) before anything is written
    figures = output_dir / FIGURES
    created = [folder for folder in (figures, *figures.parents) if not folder.exists()]  # innermost first
    figures.mkdir(parents=True, exist_ok=True)
    try:
        if not papers:
            return write_sweep_pages(records, output_dir, command, draw)
        return write_pages(records, output_dir, command, numbers, readme, studies, place, readme_place, draw)
    except BaseException:  # a failed report leaves none of the folders it made empty behind
        for folder in created:
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
        raise


WRITING = ".report-writing"
"""The marker a report leaves while it puts its pages in place: found by the next report (which rewrites them all)
and by `--check`, it says the pages may come from two runs."""


def write_together(output_dir: Path, files: dict[Path, str]) -> None:
    """Write every page of one report, built in memory, as one step the next command recognises: the marker first
    (naming the files), each file atomically, the marker last."""
    marker = output_dir / WRITING
    write_text_atomic(marker, "\n".join(str(path) for path in files) + "\n")
    for path, text in files.items():
        write_text_atomic(path, text)
    marker.unlink()


def write_sweep_pages(records: list[RunRecord], output_dir: Path, command: str, draw: bool = True) -> dict:
    """`REPORT` (the settings of one's own sweep) and `runs`, as Markdown and HTML."""
    documents = {"REPORT": sweep_summary(records, output_dir, command, FIGURES, draw),
                 "runs": runs_document(records, output_dir, draw)}  # fmt: skip
    nav = [("summary", "REPORT.html"), ("runs", "runs.html")]
    files = {}
    for name, document in documents.items():
        files[output_dir / f"{name}.md"] = document.to_markdown()
        files[output_dir / f"{name}.html"] = document.to_html(f"hf_icl report: {name}", nav)
    write_together(output_dir, files)
    return {"runs": len(records)}


def write_pages(records: list[RunRecord], output_dir: Path, command: str, numbers: PaperNumbers,
                readme: str | Path | None, studies: list[Study] = (), place: Path | None = None,
                readme_place: Path | None = None, draw: bool = True) -> dict:  # fmt: skip
    """:func:`build_report`'s pages, figures and README block, from the runs read."""
    place = Path(place or output_dir)
    assessments = [assess(f, numbers, records) for f in numbers.findings]
    for a in assessments:  # criteria that cannot fail are refused before anything is written
        if a.finding.kind == "outcome" and a.finding.expect == "succeeds" and (why := vacuous(a.finding, a.evidence)):
            raise ValueError(why)
    lines = number_lines(numbers, assessments, records)
    pages = {"REPORT": "summary", **{p: p for p in numbers.papers}, "runs": "runs"}
    nav = [(label, f"{name}.html") for name, label in pages.items()]
    documents = {}
    doc = Document()
    doc.heading(1, "Reproduction report")
    doc.paragraph(f"Regenerate with `{command}` (the papers' numbers and findings ship in "
                  "`hf_icl/report/paper_numbers.yaml`). Each finding and each published number has one verdict: "
                  + ", ".join(f"{MARKS[v]} {v}" for v in VERDICTS) + "; *scaled* marks a verdict resting on runs "
                  "smaller than the paper's setting. The rules are at the end.")  # fmt: skip
    experiments = sorted({r.experiment for r in records})
    doc.paragraph(f"{len(records)} runs in {len(experiments)} experiments ([runs](runs.md)).")
    objects = json.loads(findings_text(assessments, place))
    doc.paragraph(counts_sentence(objects).replace("{prefix}", ""))
    doc.table(SUMMARY_HEADER, summary_rows(numbers, objects, lines))
    doc.heading(2, "Findings")
    doc.table(["paper", "finding", "verdict", "seeds", "separation", "reason"],
              [[f"[{a.finding.paper}]({a.finding.paper}.md#{a.finding.id})", a.finding.claim, mark(a), seeds_text(a),
                separation_text(a), a.reason] for a in assessments])  # fmt: skip
    if studies:
        doc.heading(2, "Beyond the papers")
        doc.paragraph("Studies no paper's finding covers, each declared by a `study.json` in its folder: what it "
                      "found, its write-up, and the committed files its numbers come from.")  # fmt: skip
        doc.table(["study", "finding", "evidence"], [study_row(study, place) for study in studies])
    doc.heading(2, "How findings are judged")
    for text in (*ENTITIES.split("\n\n")[1:], *rules.__doc__.split("\n\n")[1:], *SEPARATION.split("\n\n")[1:],
                 *GROUPING.split("\n\n")[1:]):  # fmt: skip
        if text.lstrip().startswith("- "):
            doc.bullets([" ".join(item.split()) for item in text.strip()[2:].split("\n- ")])
        else:
            doc.paragraph(" ".join(text.split()))
    documents["REPORT"] = doc
    for paper in numbers.papers:
        documents[paper] = paper_page(paper, numbers, assessments, lines, records, output_dir, draw)
    documents["runs"] = runs_document(records, output_dir, draw)
    files = {output_dir / "findings.json": findings_text(assessments, place)}
    for name, document in documents.items():
        files[output_dir / f"{name}.md"] = document.to_markdown()
        files[output_dir / f"{name}.html"] = document.to_html(f"hf_icl report: {pages[name]}", nav)
    if readme is not None:
        readme = Path(readme)
        where = Path(readme_place or readme)
        prefix = Path(os.path.relpath(place.resolve(), where.resolve().parent)).as_posix() + "/"
        files[readme] = readme_with_block(readme, headline_table(numbers, assessments, prefix, objects))
    write_together(output_dir, files)
    counts = {"runs": len(records)}
    for paper in numbers.papers:
        counts[paper] = dict(Counter(a.verdict for a in assessments if a.finding.paper == paper))
    return counts


def runs_document(records: list[RunRecord], output_dir: Path, draw: bool = True) -> Document:
    """The runs page: every run by experiment, the runs over the CPU budget, a figure per experiment."""
    runs = Document()
    runs.heading(1, "Runs")
    runs.paragraph("Every committed training run the report reads, by experiment (test-split numbers of the model). "
                   "`CPU min` is `train.cpu_time_s` over all of the run's threads.")  # fmt: skip
    late = over_budget(records)
    timed = sum(budget_minutes(r) is not None for r in records)
    runs.paragraph(f"**Over the {CPU_BUDGET_MINUTES}-minute budget of a CPU run:** {len(late)} of {timed} runs that "
                   f"recorded their CPU time need more than {CPU_BUDGET_MINUTES} minutes on their own cores (CPU time "
                   "over their threads, at most 2), marked *(over)* below"
                   + (": " + ", ".join(f"`{r.experiment}` / `{r.name}` ({budget_minutes(r):.0f} min)" for r in late)
                      if late else "") + ".")  # fmt: skip
    for experiment in sorted({r.experiment for r in records}):
        group = [r for r in records if r.experiment == experiment]
        runs.heading(2, f"`{experiment}`")
        runs.table(*run_table(group))
        figure = f"{FIGURES}/runs_{slug(experiment)}.png"
        if curve_figure(output_dir / figure, group, experiment, draw):
            runs.image(figure, f"{experiment}: by length or by example")
    return runs


def study_row(study: Study, output_dir: Path) -> list[str]:
    """A study's row of the report: its title linked to its page, its finding, its evidence files linked."""

    def link(name: str) -> str:
        return Path(os.path.relpath((study.folder / name).resolve(), output_dir.resolve())).as_posix()

    evidence = ", ".join(f"[{name}]({link(name)})" for name in study.evidence)
    return [f"[{study.title}]({link(study.page)})", study.finding, evidence]


def readme_with_block(readme: Path, table: str) -> str:
    """The text of `readme` with `table` between its headline markers.

    Raises:
        ValueError: the markers are missing.
    """
    text = readme.read_text(encoding="utf-8")
    if HEADLINE_START not in text or HEADLINE_END not in text:
        raise ValueError(f"{readme}: no {HEADLINE_START} ... {HEADLINE_END} block to write the findings table into")
    head, rest = text.split(HEADLINE_START, 1)
    return head + HEADLINE_START + "\n" + table + HEADLINE_END + rest.split(HEADLINE_END, 1)[1]


__all__ = ["build_report", "headline_table", "Finding", "fmt"]
