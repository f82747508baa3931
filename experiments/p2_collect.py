"""`python experiments/p2_collect.py RUN_DIR|ROOT... --output DIR [--plot NAME.png]`.

Collect regular-language runs (P2 Table 1 tasks: accuracy at the query position per test length) into DIR: each
run's metrics.json as `<name>_metrics.json`, a `summary.md` table of every run in DIR, collected now or before
(in-range accuracy, test accuracy over all test lengths, and the accuracy in length bands of 1-2x, 2-4x, 4-8x and
beyond 8x the longest training string, CPU seconds from `train.cpu_time_s`) and, with --plot, accuracy against
length per task (mean over the seeds of a setting, one thin line per seed; lengths binned in eights of the range to
read through the 32-string noise).
A run name is copy_collect's (`parity_check-regular_gpt-seed0`); runs that differ only in the seed are one setting.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from copy_collect import collect, collected, collector_parser, family

BANDS = ((1, 2), (2, 4), (4, 8), (8, None))  # multiples of the longest training string


def setting(name: str) -> str:
    """The run name without its seed."""
    return family(name)


def band_accuracy(per_length: dict[str, float], train_max: int, low: int, high: int | None) -> float | None:
    values = [v for k, v in per_length.items() if low * train_max < int(k) <= (high or 10**9) * train_max]
    return sum(values) / len(values) if values else None


def row(name: str, metrics: dict) -> str:
    test, train = metrics["test"], metrics["train"]
    train_max = test["train_max_length"]
    bands = [band_accuracy(test["per_length"], train_max, lo, hi) for lo, hi in BANDS]
    cells = " | ".join("–" if b is None else f"{b:.3f}" for b in bands)
    in_range = metrics.get("validation", {}).get("model", {}).get("accuracy_in_train_range")
    return (
        f"| {name} | {metrics['architecture']} | {metrics['num_parameters']:,} | {train_max} | {train['steps']} | "
        f"{train['cpu_time_s']:.0f} | {in_range:.3f} | {test['model']['accuracy']:.3f} | {cells} |"
    )


def plot(loaded: list[tuple[str, dict]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_task = defaultdict(lambda: defaultdict(list))
    for name, metrics in loaded:
        by_task[metrics["task"]][setting(name)].append(metrics["test"]["per_length"])
    fig, axes = plt.subplots(1, len(by_task), figsize=(5 * len(by_task), 4), squeeze=False)
    for ax, (task, settings) in zip(axes[0], sorted(by_task.items())):
        for i, (label, curves) in enumerate(sorted(settings.items())):
            lengths = sorted(int(k) for k in curves[0])
            step = max(1, len(lengths) // 8)
            bins = [lengths[j : j + step] for j in range(0, len(lengths), step)]
            xs = [sum(b) / len(b) for b in bins]

            def binned(curve, bins=bins):
                return [sum(curve[str(k)] for k in b) / len(b) for b in bins]

            mean = [sum(vals) / len(vals) for vals in zip(*(binned(c) for c in curves))]
            text = label.removeprefix(f"{task}-")
            ax.plot(xs, mean, "-o", color=f"C{i}", lw=2, label=f"{text} ({len(curves)} seed{'s' * (len(curves) > 1)})")
            for c in curves if len(curves) > 1 else ():
                ax.plot(xs, binned(c), "-", color=f"C{i}", lw=0.6, alpha=0.5)
        ax.set(title=f"{title} {task}".strip(), xlabel="test length", ylabel="accuracy", ylim=(0, 1.02))
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    parser = collector_parser(__doc__)
    args = parser.parse_args()
    collect(args.runs, args.output)
    loaded = collected(args.output)
    band_names = " | ".join(f"{lo}-{hi}x" if hi else f">{lo}x" for lo, hi in BANDS)
    lines = [
        "Accuracy at the query position. `in range` = validation split (training lengths); `test` = every test "
        "length; then the test accuracy in bands of the longest training string L (e.g. 1-2x: L < length <= 2L). "
        "CPU s = `train.cpu_time_s` (one thread, shared 2-core machine). Chance: 0.5 (parity, even pairs), 0.2 "
        "(cycle navigation, modular arithmetic).",
        "",
        f"| run | architecture | parameters | L | steps | CPU s | in range | test | {band_names} |",
        "|---|---|---|---|---|---|---|---|" + "---|" * len(BANDS),
    ]
    lines += [row(name, metrics) for name, metrics in sorted(loaded)]
    by_setting = defaultdict(list)
    for name, metrics in loaded:
        by_setting[setting(name)].append(metrics)
    if any(len(v) > 1 for v in by_setting.values()):
        lines += ["", "Mean ± sd over seeds:", "", "| setting | seeds | in range | test |", "|---|---|---|---|"]
        for name, group in sorted(by_setting.items()):
            ins = [m["validation"]["model"]["accuracy_in_train_range"] for m in group]
            tests = [m["test"]["model"]["accuracy"] for m in group]
            lines.append(f"| {name} | {len(group)} | {mean_sd(ins)} | {mean_sd(tests)} |")
    (args.output / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    if args.plot:
        plot(loaded, args.output / args.plot, args.title)


def mean_sd(values: list[float]) -> str:
    mean = sum(values) / len(values)
    sd = (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5 if len(values) > 1 else 0.0
    return f"{mean:.3f} ± {sd:.3f}"


if __name__ == "__main__":
    main()
