"""The reproduction report: every measured number beside the paper's, with a verdict, then the runs themselves."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .document import Document  # noqa: E402
from .papers import (  # noqa: E402
    OUTCOMES,
    VERDICTS,
    PaperNumbers,
    judge,
    judge_contrast,
    load_paper_numbers,
    outcome_of,
)
from .papers import __doc__ as RULES  # noqa: E402
from .runs import RunRecord, find_runs, measure  # noqa: E402
from .runs import __doc__ as GROUPING  # noqa: E402

FIGURES = "report_figures"
MARKS = {"reproduced": "✅ reproduced", "direction only": "↗ direction only", "not reproduced": "❌ not reproduced"}


def write_text_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".tmp-{path.name}")
    tmp.write_text(text)
    tmp.replace(path)


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower()


def fmt(entry, value) -> str:
    if value is None:
        return "(ordering only)"
    if isinstance(value, str):
        return f"{value} ({OUTCOMES[value]})"
    return f"{value:.3g}" if entry.scale == "log" else f"{value:.3f}"


def runs_cell(measurement) -> str:
    if measurement.same_everywhere:
        return f"every run ({measurement.settings} settings, one value)"
    names = sorted({r.name for r in measurement.runs})
    seeds = f", {len(measurement.runs)} seeds" if len(measurement.runs) > 1 else ""
    best = f" (best of {measurement.settings} settings)" if measurement.settings > 1 else ""
    return (", ".join(f"`{n}`" for n in names[:3]) + (" …" if len(names) > 3 else "")) + seeds + best


def bar_figure(path: Path, rows: list[tuple[str, float, dict]], log: bool, title: str) -> None:
    """Paper value beside each experiment's measured value, one group per number."""
    experiments = sorted({e for _, _, measured in rows for e in measured})
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(rows) + 2), 3.8))
    width = 0.8 / (1 + len(experiments))
    for i, name in enumerate(["paper", *experiments]):
        values = [paper if name == "paper" else measured.get(name) for _, paper, measured in rows]
        values = [float("nan") if v is None else v for v in values]  # ordering-only paper entries have no value
        ax.bar([j + (i - len(experiments) / 2) * width for j in range(len(rows))], values, width, label=name)
    ax.set_xticks(range(len(rows)), [label for label, _, _ in rows], rotation=30, ha="right", fontsize=8)
    ax.set(title=title, yscale="log" if log else "linear")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def run_table(records: list[RunRecord]) -> tuple[list[str], list[list]]:
    keys = list(dict.fromkeys(k for r in records for k, v in r.metrics["test"].get("model", {}).items()
                              if isinstance(v, (int, float))))  # fmt: skip
    header = ["run", "task", "architecture", "preset", "parameters", "steps", "train time (s)", *keys]
    rows = []
    for r in sorted(records, key=lambda r: r.name):
        m, train, model = r.metrics, r.metrics.get("train", {}), r.metrics["test"].get("model", {})
        cells = [f"{model[k]:.4g}" if k in model else "–" for k in keys]
        size, seconds = f"{m.get('num_parameters', 0):,}", f"{train.get('wall_time_s', 0):.0f}"
        rows.append([f"`{r.name}`", m.get("task"), m.get("architecture"), m.get("preset"), size, train.get("steps"),
                     seconds, *cells])  # fmt: skip
    return header, rows


def length_figure(path: Path, records: list[RunRecord], title: str) -> bool:
    curves = [r for r in records if "per_length" in r.metrics["test"]]
    if not curves:
        return False
    from ..evaluation.length_sweep import draw_length_curve

    fig, ax = plt.subplots(figsize=(8, 3.8))
    for r in curves:
        draw_length_curve(ax, r.metrics["test"], f"{title}", label=r.name, bin_width=20)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def build_report(run_paths: list, output_dir: str | Path, command: str, numbers: PaperNumbers | None = None) -> dict:
    """Write `REPORT.md`, `REPORT.html` and `report_figures/*.png` to `output_dir`; returns the verdict counts.

    Args:
        run_paths: run folders, or folders holding run folders at any depth.
        output_dir: where the report goes.
        command: the command that regenerates it (printed at the top).
        numbers: the papers' numbers (default: the shipped `paper_numbers.yaml`).
    """
    numbers = numbers or load_paper_numbers()
    output_dir = Path(output_dir)
    (output_dir / FIGURES).mkdir(parents=True, exist_ok=True)
    records = find_runs(run_paths)
    measured = {entry_id: measure(entry, records) for entry_id, entry in numbers.entries.items()}
    counts: dict[str, Counter] = {paper: Counter() for paper in numbers.papers}
    doc = Document()
    doc.heading(1, "Reproduction report")
    doc.paragraph(f"Regenerate with `{command}` (CPU runs; the papers' numbers ship in "
                  "`hf_icl/report/paper_numbers.yaml`). Verdicts: ✅ reproduced (within the tolerance), "
                  "↗ direction only (off in value, on the paper's side of the reference level, or the paper's "
                  "ordering of a contrast), ❌ not reproduced; the rules are at the end.")  # fmt: skip
    experiments = sorted({r.experiment for r in records})
    doc.paragraph(f"{len(records)} runs in {len(experiments)} experiments: " + ", ".join(f"`{e}`" for e in experiments))
    sections = Document()
    for paper, title in numbers.papers.items():
        sections.heading(2, f"{paper} — {title}")
        missing = []
        for source in (s for s in numbers.sources if s["paper"] == paper):
            entries = [e for e in numbers.entries.values() if e.source == source["id"]]
            found = [(e, m) for e in entries for m in measured[e.id]]
            if not found:
                missing.append(f"{source['where']}: {len(entries)} numbers")
                continue
            sections.heading(3, source["where"])
            rows, bars = [], {}
            for entry, m in found:
                verdict = judge(entry, m.value)
                counts[paper][verdict] += 1
                ours = fmt(entry, m.value)
                if entry.outcome:
                    ours = f"{outcome_of(entry, m.value) or 'not judged'} ({entry.metric.split('.')[-1]} {m.value:.3g})"
                rows.append([entry.row, entry.column, fmt(entry, entry.value), ours, f"`{m.experiment}`",
                             runs_cell(m), MARKS.get(verdict, verdict)])  # fmt: skip
                if not entry.outcome:
                    bar = bars.setdefault(f"{entry.row} · {entry.column}", (entry.value, {}, entry.scale))
                    bar[1][m.experiment] = m.value
            sections.table(["", "", "paper", "ours", "experiment", "runs", "verdict"], rows)
            unmeasured = sorted({f"{e.row} ({e.column})" for e in entries if not measured[e.id]})
            if unmeasured:
                sections.paragraph("Not measured yet: " + "; ".join(unmeasured) + ".")
            if bars:
                figure = f"{FIGURES}/{source['id']}.png"
                log = any(scale == "log" for _, _, scale in bars.values())
                title = f"{paper} {source['where'].split(',')[0]}"
                bar_figure(output_dir / figure, [(k, v, m) for k, (v, m, _) in bars.items()], log, title)
                sections.image(figure, source["where"])
        if missing:
            sections.paragraph("No runs yet for:")
            sections.bullets(missing)
    contrast_rows, pending = [], 0
    for c in numbers.contrasts:
        better, worse = numbers.entries[c.better], numbers.entries[c.worse]
        pairs = [(a, b) for a in measured[c.better] for b in measured[c.worse] if a.experiment == b.experiment]
        pending += not pairs
        for a, b in pairs:
            verdict = judge_contrast(better, worse, a.value, b.value)
            counts[better.paper][f"contrast {verdict}"] += 1
            paper = f"{fmt(better, better.value)} vs {fmt(worse, worse.value)}"
            pair = (f"{better.column} vs {worse.column} ({better.row})" if better.row == worse.row
                    else f"{better.row} vs {worse.row} ({better.column})")  # fmt: skip
            contrast_rows.append([c.claim, pair, paper,
                                  f"{fmt(better, a.value)} vs {fmt(worse, b.value)}", f"`{a.experiment}`",
                                  MARKS.get(verdict, verdict)])  # fmt: skip
    summary = []
    for paper in numbers.papers:
        total = sum(1 for e in numbers.entries.values() if e.paper == paper)
        c = counts[paper]
        summary.append([paper, total, *(c[v] for v in VERDICTS),
                        " / ".join(str(c[f"contrast {v}"]) for v in VERDICTS[:3])])  # fmt: skip
    doc.table(["paper", "published numbers", *VERDICTS, "contrasts ✅ / ↗ / ❌"], summary)
    doc.blocks += sections.blocks
    doc.heading(2, "Contrasts (claims that one model beats another, measured within one experiment)")
    if contrast_rows:
        doc.table(["claim", "pair", "paper", "ours", "experiment", "verdict"], contrast_rows)
    doc.paragraph(f"{pending} of {len(numbers.contrasts)} contrasts have no experiment measuring both sides yet.")
    doc.heading(2, "Runs")
    for experiment in experiments:
        group = [r for r in records if r.experiment == experiment]
        doc.heading(3, f"`{experiment}`")
        doc.table(*run_table(group))
        figure = f"{FIGURES}/runs_{slug(experiment)}.png"
        if length_figure(output_dir / figure, group, experiment):
            doc.image(figure, f"{experiment}: accuracy by length")
    doc.heading(2, "How numbers are matched and judged")
    for text in (*RULES.split("\n\n")[1:], *GROUPING.split("\n\n")[1:]):
        if text.lstrip().startswith("- "):
            doc.bullets([" ".join(item.split()) for item in text.strip()[2:].split("\n- ")])
        else:
            doc.paragraph(" ".join(text.split()))
    write_text_atomic(output_dir / "REPORT.md", doc.to_markdown())
    write_text_atomic(output_dir / "REPORT.html", doc.to_html(output_dir, "hf_icl reproduction report"))
    return {"runs": len(records), **{paper: dict(c) for paper, c in counts.items()}}
