"""Print one Markdown table (and optionally one PNG of length curves) from several runs' `metrics.json`.

    python experiments/summarize_runs.py outputs/length-generalization/parity_check/*/metrics.json \
        [--plot outputs/length-generalization/parity_check/curves.png]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("metrics", nargs="+", type=Path)
    parser.add_argument("--plot", type=Path, help="write the per-length accuracy curves of all runs here")
    parser.add_argument("--bin-width", type=int, default=20, help="average the curves over bins of lengths")
    args = parser.parse_args()
    runs = [(path.parent.name, json.loads(path.read_text())) for path in args.metrics]
    keys = list(dict.fromkeys(k for _, m in runs for k in m["test"]["model"]))
    print("| run | parameters | steps | train time (s) | " + " | ".join(f"test {k}" for k in keys) + " |")
    print("|---|---|---|---|" + "---|" * len(keys))
    for name, m in runs:
        cells = [f"{m['test']['model'].get(k, float('nan')):.4f}" for k in keys]
        print(
            f"| {name} | {m['num_parameters']:,} | {m['train']['steps']} | {m['train']['wall_time_s']:.0f} | "
            + " | ".join(cells)
            + " |"
        )
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from hf_icl.evaluation.length_sweep import draw_length_curve

        fig, ax = plt.subplots(figsize=(8, 4))
        for name, m in runs:
            draw_length_curve(ax, m["test"], m["task"], label=name, bin_width=args.bin_width)
        handles, labels = ax.get_legend_handles_labels()
        unique = dict(zip(labels, handles))
        ax.legend(unique.values(), unique.keys())
        fig.tight_layout()
        fig.savefig(args.plot, dpi=100)


if __name__ == "__main__":
    main()
