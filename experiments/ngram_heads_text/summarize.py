"""Collect the n-gram-heads-on-text runs (P1 Table 2 at CPU scale) into one table, one figure and the metrics files.

    python experiments/ngram_heads_text/summarize.py outputs/ngram_heads_text --output docs/results/ngram_heads_text

Reads `<runs>/<architecture>-<variant>/metrics.json` (train.py: training history, test split) and
`<runs>/<architecture>-<variant>/validation/metrics.json` (`python -m hf_icl.evaluate --split validation`); writes
`table.md` (printed too), `ngram_heads_text.png` (validation perplexity per pair, training loss curves) and a copy of
each run's metrics and summary (no weights).
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ARCHITECTURES = ("llama", "retnet", "gla")
VARIANTS = {"base": "base", "ngh": "+ NGH₁⁽¹²³⁾ + NGH₋₂⁽¹²³⁾"}
PAPER = {"retnet": (16.55, 15.86), "gla": (15.65, 15.24), "llama": (16.96, 15.82)}
"""P1 Table 2: validation perplexity of the 340M models on SlimPajama (7B tokens), base and with the heads."""


def load_run(folder: Path) -> dict:
    """The facts of one run: parameters, steps, CPU time, validation/test perplexity, unigram, loss history."""
    train, validation = (json.loads((folder / p).read_text()) for p in ("metrics.json", "validation/metrics.json"))
    config = json.loads((folder / "model" / "config.json").read_text())
    embedding = config["vocab_size"] * config["hidden_size"]  # tied input/output embedding
    return {
        "parameters": train["num_parameters"],
        "non_embedding": train["num_parameters"] - embedding,
        "layers": config["num_hidden_layers"],
        "steps": train["train"]["steps"],
        "cpu_s": train["train"]["cpu_time_s"],
        "validation": validation["validation"]["model"]["perplexity"],
        "test": train["test"]["model"]["perplexity"],
        "unigram": validation["validation"]["baselines"]["unigram"]["perplexity"],
        "history": [(h["step"], h["loss"]) for h in train["train"]["history"]],
    }


def table(runs: dict) -> list[str]:
    lines = [
        "| architecture | variant | parameters (non-embedding) | steps | CPU s | validation ppl | change | test ppl "
        "| paper ppl (340M) | paper change |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for arch in ARCHITECTURES:
        base = runs.get((arch, "base"))
        for i, variant in enumerate(VARIANTS):
            run = runs.get((arch, variant))
            if run is None:
                continue
            change = test_change = ""
            if base and variant != "base":
                change = f"{run['validation'] / base['validation'] - 1:+.1%}"
                test_change = f" ({run['test'] / base['test'] - 1:+.1%})"
            paper = PAPER[arch][i]
            paper_change = f"{PAPER[arch][1] / PAPER[arch][0] - 1:+.1%}" if variant != "base" else ""
            lines.append(
                f"| {arch} | {VARIANTS[variant]} | {run['parameters']:,} ({run['non_embedding']:,}) | {run['steps']} "
                f"| {run['cpu_s']:.0f} | {run['validation']:.2f} | {change} | {run['test']:.2f}{test_change} "
                f"| {paper:.2f} | {paper_change} |"
            )
    unigram = next(iter(runs.values()))["unigram"]
    lines.append(f"\nUnigram baseline (training-split frequencies, add-one): validation perplexity {unigram:.2f}.")
    return lines


def plot(runs: dict, path: Path) -> None:
    fig, (bars, curves) = plt.subplots(1, 2, figsize=(11, 4))
    width = 0.38
    for i, variant in enumerate(VARIANTS):
        values = [runs[(a, variant)]["validation"] if (a, variant) in runs else 0.0 for a in ARCHITECTURES]
        positions = [x + (i - 0.5) * width for x in range(len(ARCHITECTURES))]
        drawn = bars.bar(positions, values, width, label=VARIANTS[variant])
        bars.bar_label(drawn, fmt="%.2f", fontsize=8)
    bars.set_xticks(range(len(ARCHITECTURES)), ARCHITECTURES)
    bars.set_ylabel("validation perplexity")
    bars.set_title("text_lm, BPE 1024, CPU scale")
    bars.legend(fontsize=8)
    for (arch, variant), run in sorted(runs.items()):
        steps, losses = zip(*run["history"])
        color = f"C{ARCHITECTURES.index(arch)}"
        curves.plot(steps, losses, color=color, label=f"{arch} {variant}", linestyle="-" if variant == "base" else "--")
    curves.set_xlabel("step")
    curves.set_ylabel("training loss (nats per token)")
    curves.set_title("training loss")
    curves.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", type=Path, help="folder holding <architecture>-<variant>/ run folders")
    parser.add_argument("--output", type=Path, required=True, help="where table.md, the PNG and the metrics go")
    args = parser.parse_args(argv)
    runs = {}
    for arch in ARCHITECTURES:
        for variant in VARIANTS:
            folder = args.runs / f"{arch}-{variant}"
            if (folder / "validation" / "metrics.json").is_file():
                runs[(arch, variant)] = load_run(folder)
    if not runs:
        parser.error(f"no finished run (with validation/metrics.json) under {args.runs}")
    args.output.mkdir(parents=True, exist_ok=True)
    for arch, variant in runs:
        target = args.output / f"{arch}-{variant}"
        target.mkdir(exist_ok=True)
        source = args.runs / f"{arch}-{variant}"
        shutil.copy(source / "metrics.json", target / "metrics.json")
        shutil.copy(source / "summary.md", target / "summary.md")
        shutil.copy(source / "validation" / "metrics.json", target / "validation_metrics.json")
    lines = table(runs)
    (args.output / "table.md").write_text("\n".join(lines) + "\n")
    plot(runs, args.output / "ngram_heads_text.png")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
