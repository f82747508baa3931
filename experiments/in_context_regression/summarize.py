"""Tabulate the CPU-scale P5 findings next to the paper's numbers and draw the comparison plots.

Run after `bash experiments/in_context_regression.sh`: reads `docs/results/regression/<run>/metrics.json` and writes
`docs/results/regression/findings.md` plus `linear_regression.png`, `sparse_parity.png` and `vector_mqar.png` there.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results" / "regression"
PAPER = {
    "sparse_parity": "P5 Fig. 5/7: Mamba and MambaFormer reach accuracy ≈ 1, the Transformer stays at chance (0.5) "
    "up to 24 layers × 768 and 1M steps",
    "vector_mqar": "P5 Table 3a (32 pairs, 16 queries, d = 64 / 128): Transformer w/ PE 3.99e-5 / 2.46e-7, "
    "MambaFormer 1.03e-5 / 3.79e-7, Mamba 7.23e-1 / 1.50e-1 (fails: > 0.1)",
    "linear_regression": "P5 Fig. 2 / Garg et al. Fig. 2: the Transformer's error follows least squares, (d − i)/d "
    "before d examples and ≈ 0 after",
}


def load(name: str) -> dict | None:
    path = RESULTS / name / "metrics.json"
    return json.loads(path.read_text()) if path.is_file() else None


def resources(name: str) -> str:
    path = RESULTS / name / "resources.json"
    if not path.is_file():
        return "–"
    used = json.loads(path.read_text())
    return f"{used['wall_s'] / 60:.1f} / {used['cpu_s'] / 60:.1f}"


def curve_at(results: dict, predictor: str, k: int) -> float:
    examples, values = results["examples"], results["curves"][predictor]
    return values[examples.index(k)] if k in examples[: len(values)] else float("nan")


def plot_runs(runs: dict[str, dict], path: Path, title: str, baselines=(), accuracy=False) -> None:
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for label, metrics in runs.items():
        test = metrics["test"]
        ax.plot(test["examples"][: len(test["curves"]["model"])], test["curves"]["model"], lw=2, label=label)
    first = next(iter(runs.values()))["test"] if runs else None
    for name, style in zip(baselines, ("--", ":", "-.")):
        if first and name in first["curves"]:
            values = first["curves"][name]
            values = values if accuracy else [max(v, 1e-4) for v in values]  # exact zeros of least squares
            ax.plot(first["examples"][: len(values)], values, ls=style, color="grey", label=name)
    ax.set(xlabel="in-context examples", ylabel="accuracy" if accuracy else "squared error (normalised)", title=title)
    if not accuracy:
        ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> int:
    lines = ["# P5 findings at CPU scale", "", "Wall / CPU minutes per run; every run used 1 thread.", ""]
    names = [f"linear_regression_transformer{suffix}" for suffix in ("_40k", "_small", "", "_seed1", "_lr1e-3")]
    linear = {k: v for k in names if (v := load(k))}
    if linear:
        lines += ["## (a) Linear regression: the Transformer tracks least squares", "", PAPER["linear_regression"], "",
                  "These batch-64 runs predate the recipe that meets the bar (0.018-0.036 at i = 2d over 3 seeds, "
                  "batch 256): [linear_regression.md](linear_regression.md).", ""]
        lines += [
            "| run | steps | examples i | Transformer | least squares | (d − i)/d | 3-NN | averaging | wall / CPU min |"
        ]
        lines += ["|---|---|---|---|---|---|---|---|---|"]
        for name, metrics in linear.items():
            test, d = metrics["test"], metrics["test"]["task_facts"]["n_dims"]
            for k in sorted({0, 2, d - 1, d, d + 2, max(test["examples"])}):
                row = [curve_at(test, p, k) for p in ("model", "least_squares", "3_nearest_neighbors", "averaging")]
                exact = max(d - k, 0) / d
                lines.append(
                    f"| {name} | {metrics['train']['steps']} | {k} | {row[0]:.3f} | {row[1]:.3g} | {exact:.3f} | "
                    f"{row[2]:.3f} | {row[3]:.3f} | {resources(name)} |"
                )
        lines.append("")
        plot_runs(
            {name.replace("linear_regression_", ""): m for name, m in linear.items()},
            RESULTS / "linear_regression.png",
            "Linear regression, d = 5 (normalised error)",
            ("least_squares", "3_nearest_neighbors", "averaging"),
        )
    for task, accuracy in (("sparse_parity", True), ("vector_mqar", False)):
        names = [f"{arch}{suffix}" for suffix in ("", "_short") for arch in ("transformer", "mamba", "mambaformer")]
        runs = {name: m for name in names if (m := load(f"{task}_{name}"))}
        if not runs:
            continue
        metric = "accuracy" if accuracy else "error"
        lines += [f"## {task}", "", PAPER[task], ""]
        if task == "sparse_parity":
            lines += ["These d = 10 runs at batch 64 predate the CPU recipe (d = 6, batch 512) under which Mamba and "
                      "MambaFormer learn it and the Transformer does not: [sparse_parity.md](sparse_parity.md).", ""]
        lines += [f"| model | parameters | steps | {metric} (mean) | {metric} (final) | run wall / CPU (min) |"]
        lines += ["|---|---|---|---|---|---|"]
        for arch, metrics in runs.items():
            model = metrics["test"]["model"]
            lines.append(
                f"| {arch} | {metrics['num_parameters']:,} | {metrics['train']['steps']} | "
                f"{model[f'{metric}_mean']:.4g} | {model[f'{metric}_final']:.4g} | {resources(f'{task}_{arch}')} |"
            )
        for name, values in next(iter(runs.values()))["test"]["baselines"].items():
            lines.append(
                f"| {name} (baseline) | – | – | {values[f'{metric}_mean']:.4g} | {values[f'{metric}_final']:.4g} | – |"
            )
        lines.append("")
        baselines = ("gf2_parity",) if accuracy else ()
        plot_runs(runs, RESULTS / f"{task}.png", task, baselines, accuracy)
    (RESULTS / "findings.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
