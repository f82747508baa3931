"""One published table or figure beside ours: a row per measured number with the selected setting's seeds, spread,
CPU minutes per run and what its recipe changes, and a bar figure with the seeds' spread as error bars.

The recipe column names only the training and model fields whose values differ between the table's rows (learning
rate, weight decay, depth, width, ...), so a table of models trained on one recipe shows none, and a table of models
each searched to its own setting shows what each search chose.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..block_features.feature_registry import feature_options  # noqa: E402
from ..utils.atomic_files import atomic_path  # noqa: E402
from .findings import Line  # noqa: E402
from .runs import Setting, budget_minutes  # noqa: E402

HEADER = ["number", "paper", "ours", "tolerance", "verdict", "seeds", "CPU min per run", "recipe", "run"]
RECIPE_FIELDS = ("lr", "weight_decay", "batch_size", "max_steps", "epochs", "warmup_steps", "lr_schedule", "preset")
"""Run arguments that make a recipe; with the model overrides (`overrides.<field>`, but not a block feature's field,
such as `ngram_heads`, which the row's model label already names) they are compared by row."""


def recipe_fields(setting: Setting, features: set[str]) -> dict[str, str]:
    """The recipe of the setting's first run: its recipe arguments and model overrides except the block `features`'
    fields, as text."""
    config = setting.runs[0].metrics.get("run_config", {})
    found = {key: config[key] for key in RECIPE_FIELDS if key in config}
    found |= {key: value for key, value in (config.get("overrides") or {}).items() if key not in features}
    return {key: value if isinstance(value, str) else json.dumps(value) for key, value in found.items()}


def recipe_differences(settings: list[Setting | None]) -> list[str]:
    """Per setting, its recipe fields whose values are not the same in every setting of the list (`key=value`,
    joined by `, `); '–' where a row has no setting or nothing differs."""
    features = set(feature_options())
    recipes = [recipe_fields(s, features) if s is not None else None for s in settings]
    known = [r for r in recipes if r is not None]
    keys = sorted({key for r in known for key in r})
    differing = [key for key in keys if len({r.get(key) for r in known}) > 1]
    return [", ".join(f"{key}={r[key]}" for key in differing if key in r) or "–" if r is not None else "–"
            for r in recipes]  # fmt: skip


def cpu_minutes_text(setting: Setting | None) -> str:
    """The setting's minutes per run on its own cores (:func:`budget_minutes`), mean over its timed runs."""
    minutes = [m for r in setting.runs if (m := budget_minutes(r)) is not None] if setting is not None else []
    return f"{statistics.fmean(minutes):.1f}" if minutes else "–"


def table_rows(lines: list[Line]) -> list[list]:
    """The rows of :data:`HEADER`, one per line."""
    recipes = recipe_differences([line.setting for line in lines])
    return [[line.label, line.paper, line.ours, line.tolerance, line.verdict,
             line.setting.seeds if line.setting is not None else "–", cpu_minutes_text(line.setting), recipe,
             line.where] for line, recipe in zip(lines, recipes)]  # fmt: skip


def bar_figure(path: Path, lines: list[Line], log: bool, title: str, draw: bool = True) -> None:
    """The paper's value beside ours, one pair of bars per line with `values`; ours carry the seeds' standard
    deviation as error bars (nothing drawn with `draw=False`)."""
    rows = [line for line in lines if line.values]
    if not draw or not rows:
        return
    fig, ax = plt.subplots(figsize=(max(5.5, 0.8 * len(rows) + 2.5), 3.6))
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], [line.values[0] for line in rows], 0.4, label="paper", color="#8da0cb")
    ax.bar([x + 0.2 for x in xs], [line.values[1] for line in rows], 0.4, label="ours (mean ± sd over seeds)",
           color="#fc8d62", yerr=[line.spread for line in rows], capsize=3)  # fmt: skip
    ax.set_xticks(list(xs), [line.label for line in rows], rotation=30, ha="right", fontsize=8)
    ax.set(title=title, yscale="log" if log else "linear")
    ax.legend(fontsize=8)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=80)
    plt.close(fig)
