"""Run reports: `metrics.json` (machine-readable), `summary.md` (for people) and `training_curves.png`."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .checkpoints import write_json_atomic  # noqa: E402


def metric_rows(test: dict) -> list[tuple[str, float, float]]:
    """(name, accuracy, tvd) for the model and each baseline, model first."""
    rows = []
    if "model" in test:
        rows.append(("model", test["model"]["accuracy"], test["model"]["tvd"]))
    rows += [(name, m["accuracy"], m["tvd"]) for name, m in test.get("baselines", {}).items()]
    return rows


def write_summary(path: Path, metrics: dict) -> None:
    run = metrics["run_config"]
    lines = [
        f"# {run['architecture']} ({run['preset']}) on {run['task']} (N={run['n_train']})",
        "",
        f"- parameters: {metrics['num_parameters']:,}",
        f"- steps: {metrics['train']['steps']} ({metrics['train']['epochs']:.2f} epochs), "
        f"wall time {metrics['train']['wall_time_s']:.0f} s, final loss {metrics['train']['final_loss']:.4f}",
        f"- trained on `|` labels: {run['train_on_delimiter']}",
        "",
        "| predictor | test accuracy | test TVD |",
        "|---|---|---|",
    ]
    lines += [f"| {name} | {acc:.4f} | {tvd:.4f} |" for name, acc, tvd in metric_rows(metrics["test"])]
    path.write_text("\n".join(lines) + "\n")


def plot_run(path: Path, metrics: dict) -> None:
    """Training loss curve beside the test accuracy/TVD of the model and the baselines."""
    fig, (ax_loss, ax_bars) = plt.subplots(1, 2, figsize=(11, 4))
    history = metrics["train"]["history"]
    ax_loss.plot([h["step"] for h in history], [h["loss"] for h in history])
    ax_loss.set(xlabel="optimiser step", ylabel="training loss", title="training loss")
    rows = metric_rows(metrics["test"])
    x = range(len(rows))
    ax_bars.bar([i - 0.2 for i in x], [r[1] for r in rows], width=0.4, label="accuracy")
    ax_bars.bar([i + 0.2 for i in x], [r[2] for r in rows], width=0.4, label="TVD")
    ax_bars.set_xticks(list(x), [r[0] for r in rows], rotation=30, ha="right")
    ax_bars.set(title="test set", ylim=(0, 1))
    ax_bars.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_reports(output_dir: Path, metrics: dict) -> None:
    write_json_atomic(output_dir / "metrics.json", metrics)
    write_summary(output_dir / "summary.md", metrics)
    plot_run(output_dir / "training_curves.png", metrics)
