"""`python experiments/p3_collect.py --baseline ROOT --ymodel ROOT --output DIR [--plot NAME.png] [--title T]
[--analysis FILE ...]`.

Collect ICL-arithmetic runs (P3 §4.2) of the x-only baseline and the slow/fast y-model into DIR, as one experiment:
each run's metrics.json as `baseline-seedN_metrics.json` / `ymodel-seedN_metrics.json`, a `summary.md` table (test
answer-digit accuracy on the last 2 examples of each task, accuracy on the 1st to last example of a task, the gain
of the 4th example over the 1st that issue 27 calls "uses its context" at 0.2 or more, validation accuracy, CPU
seconds from `train.cpu_time_s`), mean ± sd over seeds per model, least squares on the same rows, and with --plot
accuracy against the example index (mean over seeds, one thin line per seed). With --analysis (the
`slowfast_analysis.json` of `python -m hf_icl.analysis slowfast`, one per seed), a second table: the specialised
(folded) model beside the frozen-y forward on the same task segments, the largest logit difference between them, and
R² of the task's (a, b) from ⟨y⟩ on held-out records, per seed and mean ± sd; and the folded model's accuracy is
added to that seed's y-model record as `test.model.answer_accuracy_specialised`, beside the y-model's own accuracy on
task segments (`answer_accuracy_segments`) and `answer_accuracy_specialised_source` naming the analysis file: the
numbers the report's P3 "specialised" row and its folding finding read.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from collections import defaultdict
from pathlib import Path

from copy_collect import collect, family

USES_CONTEXT = 0.2  # the 4th example of a task answered better than the 1st by this much (issue 27)


def gain(curve: list[float]) -> float:
    """Accuracy on the 4th example of a task minus the 1st (the last minus the first with fewer examples)."""
    return curve[min(3, len(curve) - 1)] - curve[0]


def row(name: str, metrics: dict) -> str:
    test, train = metrics["test"], metrics["train"]
    curve = test["by_example"]["model"]
    validation = metrics.get("validation", {}).get("model", {}).get("answer_accuracy")
    return (
        f"| {name} | {metrics['architecture']} | {metrics['num_parameters']:,} | {train['steps']} | "
        f"{train['cpu_time_s']:.0f} | {validation:.3f} | {test['model']['answer_accuracy']:.3f} | "
        + " | ".join(f"{v:.3f}" for v in curve)
        + f" | {gain(curve):+.3f} |"
    )


def spread(values: list[float]) -> str:
    return f"{statistics.mean(values):.3f} ± {statistics.stdev(values):.3f}"


def mean_sd(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.3f} (1 seed)"
    return f"{spread(values)} ({len(values)} seeds)"


def analysed_seed(file: Path, result: dict) -> str:
    """The seed of the y-model checkpoint an analysis read (its `seed=N` run folder)."""
    found = re.search(r"seed=(\d+)", result["checkpoint"])
    if found is None:
        raise SystemExit(f"{file}: the analysed checkpoint {result['checkpoint']} is not in a seed=N run folder")
    return found.group(1)


def attach_specialised(analyses: list[tuple[Path, dict]], loaded: list[tuple[str, dict]], output: Path) -> None:
    """Add each analysis's folded-model accuracy to the collected record of the y-model it analysed (by seed)."""
    records = dict(loaded)
    for file, result in analyses:
        name = f"ymodel-seed{analysed_seed(file, result)}"
        if name not in records:
            raise SystemExit(f"{file}: analysed {result['checkpoint']}, but no collected run is named {name}")
        model = records[name]["test"]["model"]
        model["answer_accuracy_specialised"] = result["answer_accuracy"]["specialised, folded (segment)"]
        model["answer_accuracy_segments"] = result["answer_accuracy"]["y-model (segment, own y)"]
        model["answer_accuracy_specialised_source"] = str(file)
        (output / f"{name}_metrics.json").write_text(json.dumps(records[name], indent=2) + "\n")


def analysis_lines(analyses: list[tuple[Path, dict]]) -> list[str]:
    """The folded-model and ⟨y⟩ table of the slow/fast analyses, `(file, its JSON)` per seed."""
    lines = [
        "",
        "Specialised (folded) model and ⟨y⟩ (`python -m hf_icl.analysis slowfast`, one per seed; answer accuracy on "
        "the same task segments, R² on held-out records):",
        "",
        "| y-model | y-model (segment, own y) | frozen y (same segments) | specialised, folded | largest logit "
        "difference | R² a from ⟨y⟩ | R² b from ⟨y⟩ |",
        "|---|---|---|---|---|---|---|",
    ]
    columns = defaultdict(list)
    for file, result in analyses:
        accuracy, fit = result["answer_accuracy"], result["fit"]
        values = {
            "own": accuracy["y-model (segment, own y)"],
            "frozen": accuracy["frozen y, same segments as folded"],
            "folded": accuracy["specialised, folded (segment)"],
            "r2_a": fit["r2_a"],
            "r2_b": fit["r2_b"],
        }
        for key, value in values.items():
            columns[key].append(value)
        lines.append(
            f"| seed {analysed_seed(file, result)} | {values['own']:.3f} | {values['frozen']:.3f} | "
            f"{values['folded']:.3f} | {result['folded_max_abs_logit_difference']:.1e} | {values['r2_a']:.3f} | "
            f"{values['r2_b']:.3f} |"
        )
    if len(analyses) > 1:
        cells = [spread(columns[k]) for k in ("own", "frozen", "folded", "r2_a", "r2_b")]
        lines.append(f"| mean ± sd | {cells[0]} | {cells[1]} | {cells[2]} | | {cells[3]} | {cells[4]} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, nargs="+", required=True, help="baseline run folders or roots")
    parser.add_argument("--ymodel", type=Path, nargs="+", default=[], help="y-model run folders or roots")
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--plot", help="file name of the PNG under --output")
    parser.add_argument("--title", default="")
    parser.add_argument("--analysis", type=Path, nargs="*", default=[], help="slowfast_analysis.json files")
    args = parser.parse_args()
    loaded = collect(args.baseline, args.output, prefix="baseline-")
    if args.ymodel:
        loaded += collect(args.ymodel, args.output, prefix="ymodel-")
    n_ex = len(loaded[0][1]["test"]["by_example"]["model"])
    examples = " | ".join(f"example {e + 1}" for e in range(n_ex))
    lines = [
        "Answer-digit accuracy (teacher-forced) on the test split: `answer` scores the last 2 examples of every task "
        "(P3 §4.2's metric), `example k` the k-th example of a task; `gain` is example 4 minus example 1 (the model "
        f"uses its context at {USES_CONTEXT} or more). CPU s = `train.cpu_time_s` (one thread, shared 2-core machine).",
        "",
        f"| run | architecture | parameters | steps | CPU s | val answer | answer | {examples} | gain |",
        "|---|---|---|---|---|---|---|" + "---|" * n_ex + "---|",
    ]
    lines += [row(name, metrics) for name, metrics in loaded]
    least_squares = loaded[0][1]["test"]["by_example"]["least_squares"]
    lines.append(
        "| least squares on the earlier examples | – | – | – | – | – | – | "
        + " | ".join(f"{v:.3f}" for v in least_squares)
        + f" | {gain(least_squares):+.3f} |"
    )
    grouped = defaultdict(list)
    for name, metrics in loaded:
        grouped[family(name)].append(metrics)
    lines += ["", "Over seeds (mean ± sd):", "", "| model | answer | gain | uses its context |", "|---|---|---|---|"]
    for name, runs in grouped.items():
        gains = [gain(m["test"]["by_example"]["model"]) for m in runs]
        answers = [m["test"]["model"]["answer_accuracy"] for m in runs]
        uses = sum(g >= USES_CONTEXT for g in gains)
        lines.append(f"| {name} | {mean_sd(answers)} | {mean_sd(gains)} | {uses} of {len(runs)} seeds |")
    if args.analysis:
        analyses = [(file, json.loads(file.read_text())) for file in args.analysis]
        lines += analysis_lines(analyses)
        attach_specialised(analyses, loaded, args.output)
    (args.output / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        xs = list(range(1, n_ex + 1))
        for i, (name, runs) in enumerate(grouped.items()):
            curves = [m["test"]["by_example"]["model"] for m in runs]
            mean = [statistics.mean(c[e] for c in curves) for e in range(n_ex)]
            ax.plot(xs, mean, "-o", color=f"C{i}", lw=2, label=f"{name} (mean of {len(curves)})")
            for c in curves if len(curves) > 1 else []:
                ax.plot(xs, c, "-", color=f"C{i}", lw=0.6, alpha=0.5)
        ax.plot(xs, least_squares, ":", color="k", lw=1, label="least squares on the earlier examples")
        ax.set(xlabel="example within the task", ylabel="answer-digit accuracy", xticks=xs, title=args.title)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(args.output / args.plot, dpi=100)
        plt.close(fig)


if __name__ == "__main__":
    main()
