"""Collect the MQAR recall-vs-state sweep (experiments/sweeps/mqar_state_zoo.yaml) into a table, JSON and figure.

    python experiments/mqar_state_collect.py outputs/sweeps/mqar-state-zoo --dest docs/results/mqar_state

For every finished run: MQAR test accuracy (the model's greedy answers, `string_accuracy`: every query's value
token right) and the bytes of state per sequence at the task's length (`modeling.states.state_size_report` on the
saved model: a recurrent model's fixed state, attention's KV cache after `input_seq_len` tokens). A run is on the
Pareto front when no other run has at least its accuracy with less state. Writes mqar_state.json, mqar_state.md and
mqar_state.png (accuracy against state bytes, log scale, one line per architecture, the front marked).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

import hf_icl  # noqa: E402, F401  (registers the architectures)
from hf_icl.modeling.states import state_size_report  # noqa: E402
from hf_icl.utils.atomic_files import atomic_path, write_json_atomic, write_text_atomic  # noqa: E402


def collect(root: Path) -> list[dict]:
    rows = []
    for metrics_file in sorted(root.glob("*/metrics.json")):
        metrics = json.loads(metrics_file.read_text())
        run = metrics["run_config"]
        model = AutoModelForCausalLM.from_pretrained(metrics_file.parent / "model").eval()
        options = run.get("task_options", {})
        length = int(options.get("input_seq_len", 128))
        with torch.no_grad():
            state = state_size_report(model, length)
        rows.append({
            "run": metrics_file.parent.name,
            "architecture": metrics["architecture"],
            "hidden_size": model.config.hidden_size,
            "accuracy": metrics["test"]["model"]["string_accuracy"],
            "state_bytes": state["bytes_per_sequence"],
            "fixed_state": state["fixed"],
            "length": length,
            "pairs": int(options.get("num_kv_pairs", 16)),
            "steps": metrics["train"]["steps"],
        })  # fmt: skip
    for row in rows:
        row["pareto"] = not any(
            o["state_bytes"] <= row["state_bytes"] and o["accuracy"] >= row["accuracy"]
            and (o["state_bytes"], o["accuracy"]) != (row["state_bytes"], row["accuracy"])
            for o in rows
        )  # fmt: skip
    return rows


def plot(rows: list[dict], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(8, 5))
    colours, markers = plt.get_cmap("tab20").colors, "os^Dv<>ph*"  # 15 architectures: no repeated style
    for index, arch in enumerate(sorted({r["architecture"] for r in rows})):
        points = sorted((r["state_bytes"], r["accuracy"]) for r in rows if r["architecture"] == arch)
        style = {"color": colours[index % len(colours)], "marker": markers[index % len(markers)]}
        ax.plot(*zip(*points), label=arch, **style)
    front = sorted((r["state_bytes"], r["accuracy"]) for r in rows if r["pareto"])
    if front:
        ax.plot(*zip(*front), color="black", linestyle=":", linewidth=2, label="Pareto front")
    settings = sorted({(r["length"], r["pairs"]) for r in rows})
    for pairs in sorted({p for _, p in settings}):  # a model that guesses among the sequence's values
        ax.axhline(1 / pairs, color="grey", linewidth=0.8, linestyle="--")
    setting = ", ".join(f"{length} tokens, {pairs} pairs" for length, pairs in settings)
    ax.set(xscale="log", xlabel="state per sequence (bytes; attention: KV cache at the task length)",
           ylabel="MQAR accuracy", title=f"Recall against state size (MQAR at CPU scale: {setting})")  # fmt: skip
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", type=Path, help="the sweep's output_root")
    parser.add_argument("--dest", type=Path, default=Path("docs/results/mqar_state"))
    args = parser.parse_args()
    rows = collect(args.root)
    args.dest.mkdir(parents=True, exist_ok=True)
    write_json_atomic(args.dest / "mqar_state.json", rows)
    lines = ["| architecture | d | state (bytes/seq) | MQAR accuracy | Pareto |", "|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["architecture"], r["hidden_size"])):
        lines.append(f"| {r['architecture']} | {r['hidden_size']} | {r['state_bytes']:,} | {r['accuracy']:.4f} | "
                     f"{'yes' if r['pareto'] else ''} |")  # fmt: skip
    write_text_atomic(args.dest / "mqar_state.md", "\n".join(lines) + "\n")
    if rows:
        with atomic_path(args.dest / "mqar_state.png") as path:
            plot(rows, path)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
