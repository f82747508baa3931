"""The report of one's own sweep: per setting (a grid point without its seed), every test metric of the model as
mean ± sd over its seeds with n, and one figure with error bars (by test length, by in-context example, or one bar
per setting), for runs that are no paper's.
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..utils.atomic_files import atomic_path  # noqa: E402
from .document import Document  # noqa: E402
from .runs import RunRecord, Setting, number, settings_of  # noqa: E402

SEED_PART = re.compile(r"(^|[,_-])seed[=_-]?\d+|(^|[,_-])s\d+$")


def setting_label(setting: Setting) -> str:
    """The run name without its seed part (`architecture=lstm,seed=1` → `architecture=lstm`)."""
    name = sorted(r.name for r in setting.runs)[0]
    return SEED_PART.sub("", name).strip(",_-") or name


def model_metrics(records: list[RunRecord]) -> list[str]:
    """The numeric `test.model` metrics of the runs, in first-seen order."""
    found = {}
    for r in records:
        for key, value in r.metrics["test"].get("model", {}).items():
            if number(value) is not None:
                found.setdefault(key, None)
    return list(found)


def mean_sd(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.4g}"
    return f"{statistics.fmean(values):.4g} ± {statistics.stdev(values):.2g}"


def settings_table(records: list[RunRecord]) -> tuple[list[str], list[list]]:
    metrics = model_metrics(records)
    header = ["setting", "experiment", "task", "architecture", "n", *metrics]
    rows = []
    for s in settings_of(records, None, {}):
        first = s.runs[0].metrics
        cells = [mean_sd(v) if (v := s.values(f"test.model.{m}")) is not None else "–" for m in metrics]
        rows.append([f"`{setting_label(s)}`", f"`{s.experiment}`", first.get("task"), first.get("architecture"),
                     s.seeds, *cells])  # fmt: skip
    return header, rows


def _by_key(setting: Setting, field: str) -> dict[int, list[float]]:
    """Per length (`per_length`) or per example (`curves.model`), the seeds' values."""
    found: dict[int, list[float]] = {}
    for run in setting.runs:
        test = run.metrics["test"]
        if field == "per_length" and isinstance(test.get("per_length"), dict):
            points = {int(k): v for k, v in test["per_length"].items()}
        elif field == "curves" and isinstance(test.get("curves", {}).get("model"), list):
            points = dict(enumerate(test["curves"]["model"], 1))
        else:
            continue
        for key, value in points.items():
            if number(value) is not None:
                found.setdefault(key, []).append(float(value))
    return found


def settings_figure(path: Path, records: list[RunRecord], title: str, draw: bool = True) -> bool:
    """Mean ± sd over seeds per setting, with markers: by test length where runs have one or more lengths, else by
    in-context example, else one bar per setting of the first metric. False where there is nothing to draw."""
    settings = settings_of(records, None, {})
    field = next((f for f in ("per_length", "curves") if any(_by_key(s, f) for s in settings)), None)
    metrics = model_metrics(records)
    if field is None and not metrics:
        return False
    if not draw:
        return True
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    xs_all = {x for s in settings for x in _by_key(s, field)} if field is not None else set()
    if len(xs_all) > 1:
        for s in settings:
            points = sorted(_by_key(s, field).items())
            if not points:
                continue
            means = [statistics.fmean(v) for _, v in points]
            sds = [statistics.stdev(v) if len(v) > 1 else 0.0 for _, v in points]
            ax.errorbar([k for k, _ in points], means, yerr=sds, marker="o", ms=4, capsize=3, lw=1,
                        label=f"{setting_label(s)} (n = {s.seeds})")  # fmt: skip
        ax.set(xlabel="test length" if field == "per_length" else "in-context examples",
               ylabel="accuracy" if field == "per_length" else "model score by example")  # fmt: skip
        ax.legend(fontsize=7)
    else:  # one length (or none): one bar per setting, so that the settings stand apart
        if xs_all:
            (x,) = xs_all
            shown = [(s, _by_key(s, field)[x]) for s in settings if x in _by_key(s, field)]
            what = f"accuracy at length {x}" if field == "per_length" else f"score at example {x}"
        else:
            what = metrics[0]
            shown = [(s, v) for s in settings if (v := s.values(f"test.model.{what}")) is not None]
        means = [statistics.fmean(v) for _, v in shown]
        sds = [statistics.stdev(v) if len(v) > 1 else 0.0 for _, v in shown]
        ax.bar(range(len(shown)), means, yerr=sds, capsize=4, color="#8da0cb")
        ax.set_xticks(range(len(shown)), [f"{setting_label(s)}\n(n = {s.seeds})" for s, _ in shown], fontsize=7,
                      rotation=15, ha="right")  # fmt: skip
        ax.set(ylabel=what)
    ax.set_title(title)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=80)
    plt.close(fig)
    return True


def sweep_summary(records: list[RunRecord], output_dir: Path, command: str, figures: str, draw: bool) -> Document:
    """`REPORT` of a sweep that is no paper's: the runs line, the settings table and the figure."""
    doc = Document()
    doc.heading(1, "Sweep report")
    experiments = sorted({r.experiment for r in records})
    doc.paragraph(f"Regenerate with `{command}`. Each row is one setting (a grid point without its seed): every test "
                  "metric of the model as mean ± sd over its n seeds (the paper findings are left out; add `--papers` "
                  "to rate them).")  # fmt: skip
    doc.paragraph(f"{len(records)} runs in {len(experiments)} experiments ([runs](runs.md)).")
    doc.table(*settings_table(records))
    figure = f"{figures}/settings.png"
    if settings_figure(output_dir / figure, records, "mean ± sd over seeds", draw):
        doc.image(figure, "each setting: mean ± sd over its seeds")
    return doc
