"""`python experiments/p3_textmix_collect.py RUN [RUN ...] --dest DIR`.

Collect slow/fast y-model runs on text mixtures (P3 §4.3, App. E; issue 27): for each run folder (its name, e.g.
`ymodel-seed0`, names the record) run `python -m hf_icl.analysis textmix` on `RUN/model` into `DIR/<name>/` (an
existing `textmix_analysis.json` there is read, not recomputed), copy the run's metrics.json to
`DIR/<name>_metrics.json` with the analysis numbers under `test.textmix` (the paths the report's P3 text-mixture
findings read), and write `DIR/summary.md`: the test cross-entropies beside the unigram baseline, the join blocks of
y^ℓ beside the fast state's, the document embedding's nearest-neighbour accuracy beside its controls, and informed vs
uninformed cross-entropy with the frozen and mismatched controls.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path


def analyse(model_dir: Path, out: Path) -> dict:
    """The textmix analysis of one checkpoint, run once."""
    if not (out / "textmix_analysis.json").exists():
        command = [sys.executable, "-m", "hf_icl.analysis", "textmix", "--checkpoint", str(model_dir),
                   "--output", str(out), "--threads", "1"]  # fmt: skip
        subprocess.run(command, check=True)
    return json.loads((out / "textmix_analysis.json").read_text())


def summary_lines(records: dict[str, dict]) -> list[str]:
    lines = ["# Slow/fast y-model on text mixtures (P3 §4.3), CPU scale", "",
             "Collected by `python experiments/p3_textmix_collect.py`; the analyses are "
             "`python -m hf_icl.analysis textmix` (one folder per run). CPU s = `train.cpu_time_s`.", "",
             "| run | steps | CPU s | test loss (nats/char) | first excerpt | after the join | unigram |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    for name, metrics in records.items():
        model, unigram = metrics["test"]["model"], metrics["test"]["baselines"]["unigram"]
        lines.append(f"| {name} | {metrics['train']['steps']} | {metrics['train']['cpu_time_s']:.0f} | "
                     f"{model['loss']:.3f} | {model['loss_first_excerpt']:.3f} | {model['loss_second_excerpt']:.3f} | "
                     f"{unigram['loss']:.3f} |")  # fmt: skip
    lines += ["", "Join blocks (P3 Figs. 12b, 16): mean n_i·n_j within an excerpt minus across, and the median lag "
              "(positions after a join until n_p is nearer the new excerpt's mean), for y^ℓ and, as the control, the "
              "fast state x^ℓ:", "", "| run | mixture | rows | contrast y | contrast x | lag y | lag x |",
              "|---|---|---|---|---|---|---|"]  # fmt: skip
    for name, metrics in records.items():
        for kind, joins in metrics["test"]["textmix"]["joins"].items():
            y, x = joins["y"], joins["x"]
            lines.append(f"| {name} | {kind.replace('_', ' ')} | {joins['rows']} | {y['contrast']:.3f} | "
                         f"{x['contrast']:.3f} | {y['lag_median']:.0f} | {x['lag_median']:.0f} |")  # fmt: skip
    lines += ["", "⟨y⟩ as a document embedding (P3 Figs. 4.3, 14): leave-one-out 1-NN accuracy of an excerpt's "
              "document among the held-out documents:", ""]  # fmt: skip
    names = list(next(iter(records.values()))["test"]["textmix"]["embedding"]["nearest_neighbour_accuracy"])
    lines += ["| run | excerpts | documents | " + " | ".join(names) + " |", "|---|---|---|" + "---|" * len(names)]
    for name, metrics in records.items():
        embedding = metrics["test"]["textmix"]["embedding"]
        cells = " | ".join(f"{embedding['nearest_neighbour_accuracy'][n]:.3f}" for n in names)
        lines.append(f"| {name} | {embedding['excerpts']} | {embedding['documents']} | {cells} |")
    lines += ["", "Informed vs uninformed (P3 Fig. 13): the second part of each held-out document, cross-entropy minus "
              "the uninformed model's (its own y), mean over positions; share of positions below zero:", "",
              "| run | documents | uninformed (nats) | informed | frozen first-part y | mismatched document's y |",
              "|---|---|---|---|---|---|"]  # fmt: skip
    for name, metrics in records.items():
        informed = metrics["test"]["textmix"]["informed"]
        difference, below = informed["mean_difference_to_uninformed"], informed["share_of_positions_below_uninformed"]
        cells = " | ".join(f"{difference[k]:+.4f} ({below[k]:.0%})" for k in ("informed", "frozen", "mismatched"))
        lines.append(f"| {name} | {informed['documents']} | {informed['mean_loss']['uninformed']:.3f} | {cells} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path, help="run folders (with model/ and metrics.json)")
    parser.add_argument("--dest", required=True, type=Path)
    args = parser.parse_args()
    args.dest.mkdir(parents=True, exist_ok=True)
    records = {}
    for run in args.runs:
        analysis = analyse(run / "model", args.dest / run.name)
        metrics = json.loads((run / "metrics.json").read_text())
        metrics["test"]["textmix"] = {k: analysis[k] for k in ("joins", "embedding", "informed")}
        metrics["test"]["textmix"]["source"] = str(args.dest / run.name / "textmix_analysis.json")
        (args.dest / f"{run.name}_metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
        records[run.name] = metrics
    lines = summary_lines(records)
    (args.dest / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
