"""Collect the n-gram-heads-on-text runs (P1 Table 2 at CPU scale) into one table, one figure and the metrics files.

    python experiments/ngram_heads_text/summarize.py outputs/ngram_heads_text --output docs/results/ngram_heads_text

Reads `<runs>/<run>/metrics.json` (train.py: training history, test split) and
`<runs>/<run>/validation/metrics.json` (`python -m hf_icl.evaluate --split validation`), where a run is
`<architecture>-<variant>` (seed 0) or `<architecture>-<variant>-seed<S>`, plus the copies already in the output
folder; writes `table.md` (printed too; mean ± sd over seeds), `ngram_heads_text.png` (validation perplexity per
pair with the seeds, training loss curves) and a copy of each run's metrics and summary (no weights).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from hf_icl.modeling.configuration import SIZES  # noqa: E402

ARCHITECTURES = ("llama", "retnet", "gla")
VARIANTS = {"base": "base", "ngh": "+ NGH₁⁽¹²³⁾ + NGH₋₂⁽¹²³⁾"}
PAPER = {"retnet": (16.55, 15.86), "gla": (15.65, 15.24), "llama": (16.96, 15.82)}
"""P1 Table 2: validation perplexity of the 340M models on SlimPajama (7B tokens), base and with the heads."""


RUN_NAME = re.compile(r"^(?P<arch>[a-z0-9_]+)-(?P<variant>base|ngh)(?:-seed(?P<seed>\d+))?$")
"""A run folder's name: `<architecture>-<variant>` for seed 0, `<architecture>-<variant>-seed<S>` for seed S."""


def load_run(folder: Path) -> dict:
    """The facts of one run (a training folder, or its copy made by this script): parameters, steps, CPU time,
    validation/test perplexity, unigram, loss history."""
    train = json.loads((folder / "metrics.json").read_text())
    scored = folder / "validation" / "metrics.json"
    validation = json.loads((scored if scored.is_file() else folder / "validation_metrics.json").read_text())
    run = train["run_config"]
    hidden = SIZES[run["preset"]]["hidden_size"]
    embedding = train["task_facts"]["vocab_size"] * run["overrides"].get("hidden_size", hidden)  # tied in/out
    return {
        "parameters": train["num_parameters"],
        "non_embedding": train["num_parameters"] - embedding,
        "steps": train["train"]["steps"],
        "seed": run["seed"],
        "cpu_s": train["train"]["cpu_time_s"],
        "validation": validation["validation"]["model"]["perplexity"],
        "test": train["test"]["model"]["perplexity"],
        "unigram": validation["validation"]["baselines"]["unigram"]["perplexity"],
        "history": [(h["step"], h["loss"]) for h in train["train"]["history"]],
    }


def find_runs(*roots: Path) -> dict[tuple[str, str], dict[int, tuple[Path, dict]]]:
    """Every finished run under the roots, as {(architecture, variant): {seed: (folder, facts)}}; a later root's copy
    of a run stands in for an earlier one's only where the earlier root lacks it."""
    runs: dict = {}
    for root in roots:
        for folder in sorted(root.iterdir()) if root.is_dir() else ():
            name = RUN_NAME.match(folder.name)
            scored = (folder / "validation" / "metrics.json", folder / "validation_metrics.json")
            finished = any(path.is_file() for path in scored)
            if not (name and name["arch"] in ARCHITECTURES and finished and (folder / "metrics.json").is_file()):
                continue
            seed = int(name["seed"] or 0)
            runs.setdefault((name["arch"], name["variant"]), {}).setdefault(seed, (folder, load_run(folder)))
    return runs


def spread(values: list[float]) -> str:
    """`mean ± sd (n)` over seeds, or the one value."""
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.mean(values):.2f} ± {statistics.stdev(values):.2f} ({len(values)})"


def table(runs: dict) -> list[str]:
    """One row per architecture and variant: mean ± sd over the seeds (and their count) of each split's perplexity;
    the change is that of the means, and the last columns show each seed's change, which the report rates."""
    lines = [
        "| architecture | variant | parameters (non-embedding) | steps | seeds | CPU s per run | validation ppl "
        "| change: validation (test) | test ppl | test change per seed | paper ppl (340M) | paper change |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for arch in ARCHITECTURES:
        base = runs.get((arch, "base"), {})
        for i, variant in enumerate(VARIANTS):
            seeds = runs.get((arch, variant))
            if not seeds:
                continue
            facts = [seeds[s][1] for s in sorted(seeds)]
            first = facts[0]
            validation, test = ([f[k] for f in facts] for k in ("validation", "test"))
            change = per_seed = ""
            if base and variant != "base":
                base_validation, base_test = ([f[k] for _, f in base.values()] for k in ("validation", "test"))
                change = f"{statistics.mean(validation) / statistics.mean(base_validation) - 1:+.1%}"
                change += f" ({statistics.mean(test) / statistics.mean(base_test) - 1:+.1%})"
                per_seed = ", ".join(
                    f"{seeds[s][1]['test'] / base[s][1]['test'] - 1:+.1%}" for s in sorted(seeds) if s in base
                )
            cpu = statistics.mean(f["cpu_s"] for f in facts)
            paper = PAPER[arch][i]
            paper_change = f"{PAPER[arch][1] / PAPER[arch][0] - 1:+.1%}" if variant != "base" else ""
            lines.append(
                f"| {arch} | {VARIANTS[variant]} | {first['parameters']:,} ({first['non_embedding']:,}) "
                f"| {first['steps']} | {', '.join(map(str, sorted(seeds)))} | {cpu:.0f} | {spread(validation)} "
                f"| {change} | {spread(test)} | {per_seed} | {paper:.2f} | {paper_change} |"
            )
    unigram = next(iter(next(iter(runs.values())).values()))[1]["unigram"]
    lines.append(f"\nUnigram baseline (training-split frequencies, add-one): validation perplexity {unigram:.2f}.")
    return lines


def plot(runs: dict, path: Path) -> None:
    """Validation perplexity per architecture and variant (bar: mean over seeds, error bar: sd, dots: the seeds) and
    the training-loss curves (one line per seed)."""
    fig, (bars, curves) = plt.subplots(1, 2, figsize=(11, 4))
    width = 0.38
    for i, variant in enumerate(VARIANTS):
        values = [[f["validation"] for _, f in runs.get((a, variant), {}).values()] for a in ARCHITECTURES]
        positions = [x + (i - 0.5) * width for x in range(len(ARCHITECTURES))]
        means = [statistics.mean(v) if v else 0.0 for v in values]
        errors = [statistics.stdev(v) if len(v) > 1 else 0.0 for v in values]
        drawn = bars.bar(positions, means, width, yerr=errors, capsize=3, label=VARIANTS[variant])
        bars.bar_label(drawn, fmt="%.2f", fontsize=8, padding=6)
        for x, seeds in zip(positions, values):
            bars.scatter([x] * len(seeds), seeds, color="black", s=6, zorder=3)
    bars.set_xticks(range(len(ARCHITECTURES)), ARCHITECTURES)
    bars.set_ylabel("validation perplexity (mean ± sd over seeds)")
    bars.set_title("text_lm, BPE 1024, CPU scale")
    bars.legend(fontsize=8)
    for (arch, variant), seeds in sorted(runs.items()):
        for seed, (_, facts) in sorted(seeds.items()):
            steps, losses = zip(*facts["history"])
            curves.plot(steps, losses, color=f"C{ARCHITECTURES.index(arch)}", linewidth=0.8,
                        label=f"{arch} {variant}" if seed == min(seeds) else None,
                        linestyle="-" if variant == "base" else "--")
    curves.set_xlabel("step")
    curves.set_ylabel("training loss (nats per token)")
    curves.set_title("training loss (one line per seed)")
    curves.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", type=Path, help="folder holding the run folders (<architecture>-<variant>[-seedS]/)")
    parser.add_argument("--output", type=Path, required=True, help="where table.md, the PNG and the metrics go; "
                        "copies already there count as runs too, so seeds trained on different days join one table")
    args = parser.parse_args(argv)
    runs = find_runs(args.runs, args.output)
    if not runs:
        parser.error(f"no finished run (with validation/metrics.json) under {args.runs}")
    args.output.mkdir(parents=True, exist_ok=True)
    for seeds in runs.values():
        for source, _ in seeds.values():
            target = args.output / source.name
            if target.resolve() == source.resolve():
                continue
            target.mkdir(exist_ok=True)
            shutil.copy(source / "metrics.json", target / "metrics.json")
            shutil.copy(source / "summary.md", target / "summary.md")
            shutil.copy(source / "validation" / "metrics.json", target / "validation_metrics.json")
    lines = table(runs)
    (args.output / "table.md").write_text("\n".join(lines) + "\n")
    plot(runs, args.output / "ngram_heads_text.png")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
