"""`python experiments/copy_collect.py RUN_DIR|ROOT... --output DIR [--plot NAME.png] [--title T]
[--lengths 20,30,40,80]`.

Collect generation-task runs (copy, lookups) into DIR: each run's metrics.json as `<name>_metrics.json`
(the training-loss history kept), a `summary.md` table of every run in DIR, collected now or before (string
accuracy by greedy generation per test length, the in-range validation accuracy, the training CPU seconds read from
`train.cpu_time_s`, parameters, final loss) and, with --plot, string accuracy against length for every run (mean
over runs that differ only by a `seedN` part, one thin line per seed). A run name is its folder name, `task=` and
`variant=` stripped and `,` as `-` (`seed=1,variant=rope` -> `seed1-rope`).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
from collections import defaultdict
from pathlib import Path


def find_runs(paths: list[Path]) -> list[Path]:
    runs = []
    for path in paths:
        if (path / "metrics.json").is_file():
            runs.append(path)
        else:
            runs.extend(sorted(p.parent for p in path.glob("*/metrics.json")))
    return runs


def run_name(path: Path) -> str:
    """The folder name as a file-name stem: `task=copy,variant=rope,seed=1` -> `copy-rope-seed1`."""
    parts = [re.sub(r"^(variant|task)=", "", part).replace("seed=", "seed") for part in path.name.split(",")]
    return "-".join(parts)


def family(name: str) -> str:
    """The name without its seed (`seed1-rope`, `rope-seed1`, `…-s0`)."""
    return re.sub(r"^seed\d+-|-seed\d+|-s\d+$", "", name)


def row(name: str, metrics: dict, lengths: list[str]) -> str:
    test, train = metrics["test"], metrics["train"]
    group = test["group_by"]
    curve = test[f"per_{group}"]
    val = metrics.get("validation", {}).get("model", {}).get("string_accuracy")
    cells = " | ".join(f"{curve[k]:.3f}" if k in curve else "–" for k in lengths)
    val_text = f"{val:.3f}" if val is not None else "–"
    return (
        f"| {name} | {metrics['num_parameters']:,} | {train['steps']} | {train['cpu_time_s']:.0f} | "
        f"{train['final_loss']:.4f} | {val_text} | {cells} |"
    )


def collector_parser(doc: str) -> argparse.ArgumentParser:
    """The arguments every collector takes: run folders or roots, --output, --plot, --title."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--plot", help="file name of the PNG under --output")
    parser.add_argument("--title", default="")
    return parser


def collect(paths: list[Path], output: Path, prefix: str = "") -> list[tuple[str, dict]]:
    """Copy each run's metrics.json into `output` as `<prefix><name>_metrics.json`; `(name, metrics)` per run."""
    runs = find_runs(paths)
    if not runs:
        raise SystemExit("no run folder with a metrics.json")
    output.mkdir(parents=True, exist_ok=True)
    loaded = []
    for path in runs:
        name = prefix + run_name(path)
        shutil.copyfile(path / "metrics.json", output / f"{name}_metrics.json")
        loaded.append((name, json.loads((path / "metrics.json").read_text())))
    return loaded


def collected(output: Path) -> list[tuple[str, dict]]:
    """`(name, metrics)` for every run collected into `output` so far, by this call or an earlier one, so that a
    folder's summary lists the whole experiment even when its runs were trained, and collected, in parts."""
    files = sorted(output.glob("*_metrics.json"))
    return [(f.name.removesuffix("_metrics.json"), json.loads(f.read_text())) for f in files]


def main() -> None:
    parser = collector_parser(__doc__)
    parser.add_argument("--lengths", help="comma-separated test lengths for the table (default: all)")
    parser.add_argument("--baselines", default="3-gram copier,4-gram copier,lookup oracle")
    args = parser.parse_args()
    collect(args.runs, args.output)
    loaded = collected(args.output)
    first = loaded[0][1]["test"]
    group = first["group_by"]
    lengths = args.lengths.split(",") if args.lengths else sorted(first[f"per_{group}"], key=int)
    train_max = first.get(f"train_max_{group}")
    threads = sorted({metrics["train"].get("threads", 1) for _, metrics in loaded})
    threads = "one thread" if threads == [1] else f"{' or '.join(map(str, threads))} threads, all counted"
    lines = [
        f"String accuracy by greedy generation through `pipeline` per test {group} (longest training {group}: "
        f"{train_max}); `val` = validation split (training lengths). CPU s = `train.cpu_time_s` ({threads}, "
        "shared 2-core machine).",
        "",
        f"| run | parameters | steps | CPU s | final loss | val | {' | '.join(lengths)} |",
        "|---|---|---|---|---|---|" + "---|" * len(lengths),
    ]
    lines += [row(name, metrics, lengths) for name, metrics in loaded]
    curves = first.get("baseline_curves", {})
    for baseline in (b for b in args.baselines.split(",") if b in curves):
        lines.append(
            f"| {baseline} | – | – | – | – | – | "
            + " | ".join(f"{curves[baseline][k]:.3f}" if k in curves[baseline] else "–" for k in lengths)
            + " |"
        )
    (args.output / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        grouped = defaultdict(list)
        for name, metrics in loaded:
            grouped[family(name)].append(metrics["test"][f"per_{group}"])
        fig, ax = plt.subplots(figsize=(8, 4.8))
        for i, (name, curves_) in enumerate(grouped.items()):
            xs = sorted(int(k) for k in curves_[0])
            color = f"C{i % 10}"
            mean = [sum(c[str(x)] for c in curves_) / len(curves_) for x in xs]
            label = f"{name} (mean of {len(curves_)})" if len(curves_) > 1 else name
            ax.plot(xs, mean, "-", marker="o", color=color, lw=2, label=label)
            if len(curves_) > 1:
                for c in curves_:
                    ax.plot(xs, [c[str(x)] for x in xs], "-", color=color, lw=0.6, alpha=0.5)
        for baseline in (b for b in args.baselines.split(",") if b in curves):
            xs = sorted(int(k) for k in curves[baseline])
            ax.plot(xs, [curves[baseline][str(x)] for x in xs], ":", lw=1, label=baseline)
        if train_max is not None:
            ax.axvline(train_max, color="tab:red", ls="--", lw=1, label=f"longest training {group}")
        ax.set(xlabel=group, ylabel="string accuracy (greedy generation)", ylim=(-0.02, 1.02), title=args.title)
        ax.legend(fontsize=7, ncol=2)
        fig.tight_layout()
        fig.savefig(args.output / args.plot, dpi=100)
        plt.close(fig)


if __name__ == "__main__":
    main()
