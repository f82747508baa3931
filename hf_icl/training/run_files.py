"""Run reports: `metrics.json` (machine-readable), `summary.md` (for people) and `training_curves.png`, each written
atomically (a crash leaves the previous file, never half of one)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..block_features.feature_registry import features_label  # noqa: E402
from ..evaluation.length_sweep import draw_length_curve  # noqa: E402
from ..evaluation.tables import markdown_table, metric_rows  # noqa: E402
from ..utils.atomic_files import atomic_path, write_json_atomic, write_text_atomic  # noqa: E402


def write_summary(path: Path, metrics: dict) -> None:
    run, train = metrics["run_config"], metrics["train"]
    size = f" (N={run['n_train']})" if run.get("n_train") else ""
    epochs = f" ({train['epochs']:.2f} epochs)" if train.get("epochs") is not None else " (online sampling)"
    heads = features_label(run.get("overrides"))  # the block features' labels, e.g. "+ngh1.123"
    lines = [
        f"# {run['architecture']}{heads} ({run['preset']}) on {run['task']}{size}",
        "",
        f"- parameters: {metrics['num_parameters']:,}",
        f"- steps: {train['steps']}{epochs}, "
        f"wall time {train['wall_time_s']:.0f} s, final loss {train['final_loss']:.4f}",
        *[f"- {key}: {value}" for key, value in metrics.get("task_facts", {}).items()],
        "",
        *markdown_table(metrics["test"]),
    ]
    write_text_atomic(path, "\n".join(lines) + "\n")


def plot_run(path: Path, metrics: dict) -> None:
    """Training loss curve beside the test results: accuracy by length, or metric bars per predictor."""
    fig, (ax_loss, ax_test) = plt.subplots(1, 2, figsize=(11, 4))
    history = metrics["train"]["history"]
    ax_loss.plot([h["step"] for h in history], [h["loss"] for h in history])
    ax_loss.set(xlabel="optimiser step", ylabel="training loss", title="training loss")
    test = metrics["test"]
    if "per_length" in test:
        draw_length_curve(ax_test, test, "test accuracy by length")
    else:
        rows = metric_rows(test)
        columns = list(dict.fromkeys(key for _, m in rows for key in m))
        width = 0.8 / max(len(columns), 1)
        for i, column in enumerate(columns):
            xs = [j + (i - (len(columns) - 1) / 2) * width for j in range(len(rows))]
            ax_test.bar(xs, [m.get(column, 0.0) for _, m in rows], width=width, label=column)
        ax_test.set_xticks(range(len(rows)), [name for name, _ in rows], rotation=30, ha="right")
        ax_test.set(title="test set")
        if all(0 <= m.get(column, 0.0) <= 1 for _, m in rows for column in columns):
            ax_test.set_ylim(0, 1)
        ax_test.legend()
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=100)
    plt.close(fig)


def write_reports(output_dir: Path, metrics: dict, family=None) -> None:
    """`metrics.json`, `summary.md`, `training_curves.png`, and the task family's own figure if it has one."""
    write_json_atomic(output_dir / "metrics.json", metrics)
    write_summary(output_dir / "summary.md", metrics)
    plot_run(output_dir / "training_curves.png", metrics)
    if family is not None and family.plot is not None:
        with atomic_path(output_dir / family.plot_name) as tmp:
            family.plot(metrics["test"], tmp, f"{metrics['architecture']} on {metrics['task']}")
