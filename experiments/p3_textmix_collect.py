"""`python experiments/p3_textmix_collect.py RUN|ROOT [...] --dest DIR`.

Collect slow/fast y-model runs on text mixtures (P3 §4.3, App. E; issue 27): for each run folder (its name, e.g.
`ymodel-seed0`, names the record) run `python -m hf_icl.analysis textmix` on `RUN/model` once per held-out split, into
`DIR/<name>/` (test) and `DIR/<name>/validation/`, copy the run's metrics.json to `DIR/<name>_metrics.json` with the
analysis numbers under `test.textmix` and `validation.textmix`, and write `DIR/summary.md`: the test cross-entropies
beside the unigram baseline, the join blocks of y^ℓ beside the fast state's, the document embedding's
nearest-neighbour accuracy beside its controls, informed vs uninformed cross-entropy with the frozen and mismatched
controls, and the validation numbers a recipe search selects on.

Both splits, so a search's points (`experiments/sweeps/p3_textmix_search.yaml`) are selected on validation documents
and rated on test documents they never saw: the report selects on `validation.textmix` and reports `test.textmix`.
An analysis already in its folder is reused when it read the same split; one written before `--split` existed read
test ∪ validation, is reported as that, and is never reused for either (without the checkpoint that is an error).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

BOTH_SPLITS = "test ∪ validation"  # what an analysis read before `--split` existed (no `split` in its JSON)


def analysis_split(analysis: dict) -> str:
    return analysis.get("split", BOTH_SPLITS)


def analyse(model_dir: Path, out: Path, split: str) -> dict:
    """The textmix analysis of one checkpoint on `split`, run once (or read, when `out` holds one of that split)."""
    saved = out / "textmix_analysis.json"
    found = analysis_split(json.loads(saved.read_text())) if saved.exists() else "none"
    if found == split:
        return json.loads(saved.read_text())
    if not (model_dir / "config.json").is_file():
        raise SystemExit(f"{out}: no {split} analysis (found: {found}) and no checkpoint at {model_dir} to compute it")
    command = [sys.executable, "-m", "hf_icl.analysis", "textmix", "--checkpoint", str(model_dir),
               "--output", str(out), "--threads", "1", "--split", split]  # fmt: skip
    subprocess.run(command, check=True)
    return json.loads(saved.read_text())


def summary_lines(records: dict[str, dict]) -> list[str]:
    split = "test"  # the verdicts' split; validation_lines has what a search selects on
    lines = ["# Slow/fast y-model on text mixtures (P3 §4.3), CPU scale", "",
             "Collected by `python experiments/p3_textmix_collect.py`; the analyses are "
             "`python -m hf_icl.analysis textmix` (one folder per split and run). CPU s = `train.cpu_time_s`. "
             f"Everything above the validation table is the {split} split's.", "",
             f"| run | steps | CPU s | {split} loss (nats/char) | first excerpt | after the join | unigram |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    for name, metrics in records.items():
        model, unigram = metrics[split]["model"], metrics[split]["baselines"]["unigram"]
        lines.append(f"| {name} | {metrics['train']['steps']} | {metrics['train']['cpu_time_s']:.0f} | "
                     f"{model['loss']:.3f} | {model['loss_first_excerpt']:.3f} | {model['loss_second_excerpt']:.3f} | "
                     f"{unigram['loss']:.3f} |")  # fmt: skip
    lines += ["", "Join blocks (P3 Figs. 12b, 16): mean n_i·n_j within an excerpt minus across, and the median lag "
              "(positions after a join until n_p is nearer the new excerpt's mean), for y^ℓ and, as the control, the "
              "fast state x^ℓ:", "", "| run | mixture | rows | contrast y | contrast x | lag y | lag x |",
              "|---|---|---|---|---|---|---|"]  # fmt: skip
    for name, metrics in records.items():
        for kind, joins in metrics[split]["textmix"]["joins"].items():
            y, x = joins["y"], joins["x"]
            lines.append(f"| {name} | {kind.replace('_', ' ')} | {joins['rows']} | {y['contrast']:.3f} | "
                         f"{x['contrast']:.3f} | {y['lag_median']:.0f} | {x['lag_median']:.0f} |")  # fmt: skip
    lines += ["", "⟨y⟩ as a document embedding (P3 Figs. 4.3, 14): leave-one-out 1-NN accuracy of an excerpt's "
              "document among the held-out documents:", ""]  # fmt: skip
    names = list(next(iter(records.values()))[split]["textmix"]["embedding"]["nearest_neighbour_accuracy"])
    lines += ["| run | excerpts | documents | " + " | ".join(names) + " |", "|---|---|---|" + "---|" * len(names)]
    for name, metrics in records.items():
        embedding = metrics[split]["textmix"]["embedding"]
        cells = " | ".join(f"{embedding['nearest_neighbour_accuracy'][n]:.3f}" for n in names)
        lines.append(f"| {name} | {embedding['excerpts']} | {embedding['documents']} | {cells} |")
    lines += ["", "Informed vs uninformed (P3 Fig. 13): the second part of each held-out document, cross-entropy minus "
              "the uninformed model's (its own y), mean over positions; share of positions below zero:", "",
              "| run | documents | uninformed (nats) | informed | frozen first-part y | mismatched document's y |",
              "|---|---|---|---|---|---|"]  # fmt: skip
    for name, metrics in records.items():
        informed = metrics[split]["textmix"]["informed"]
        difference, below = informed["mean_difference_to_uninformed"], informed["share_of_positions_below_uninformed"]
        cells = " | ".join(f"{difference[k]:+.4f} ({below[k]:.0%})" for k in ("informed", "frozen", "mismatched"))
        lines.append(f"| {name} | {informed['documents']} | {informed['mean_loss']['uninformed']:.3f} | {cells} |")
    return lines


def validation_lines(records: dict[str, dict]) -> list[str]:
    """What a recipe search selects on: the two P3 text-mixture criteria on the validation split."""
    lines = ["", "Validation split (what a recipe search selects on; the verdicts read test): loss minus the unigram's "
             "(the control: at most −0.5), informed − uninformed (criterion: at most −0.01) and the three-excerpt y "
             "contrast (criterion: at least 0.5):", "",
             "| run | validation loss − unigram | informed − uninformed | three-excerpt contrast y |",
             "|---|---|---|---|"]  # fmt: skip
    for name, metrics in records.items():
        validation = metrics["validation"]
        gap = validation["model"]["loss"] - validation["baselines"]["unigram"]["loss"]
        informed = validation["textmix"]["informed"]["mean_difference_to_uninformed"]["informed"]
        contrast = validation["textmix"]["joins"]["three_excerpts"]["y"]["contrast"]
        lines.append(f"| {name} | {gap:+.3f} | {informed:+.4f} | {contrast:.3f} |")
    return lines


def collect(run: Path, dest: Path) -> dict:
    """The run's metrics with each split's analysis filed under `<split>.textmix`."""
    metrics = json.loads((run / "metrics.json").read_text())
    for split, out in (("test", dest / run.name), ("validation", dest / run.name / "validation")):
        analysis = analyse(run / "model", out, split)
        textmix = {k: analysis[k] for k in ("joins", "embedding", "informed")}
        metrics[split]["textmix"] = textmix | {"split": split, "source": str(out / "textmix_analysis.json")}
    return metrics


def run_folders(paths: list[Path]) -> list[Path]:
    """Each path that is a run folder (it holds metrics.json), else the run folders inside it (a sweep's
    output_root), in name order; a path that is neither is an error naming it."""
    runs = []
    for path in paths:
        inside = sorted(p for p in path.iterdir() if (p / "metrics.json").is_file()) if path.is_dir() else []
        if (path / "metrics.json").is_file():
            runs.append(path)
        elif inside:
            runs += inside
        else:
            raise SystemExit(f"argument runs: {str(path)!r} is neither a run folder (metrics.json) nor a folder of "
                             "them")
    return runs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path,
                        help="run folders (with model/ and metrics.json), or folders of them (a sweep's output_root)")
    parser.add_argument("--dest", required=True, type=Path)
    args = parser.parse_args(argv)
    runs = run_folders(args.runs)
    args.dest.mkdir(parents=True, exist_ok=True)
    records = {}
    for run in runs:
        records[run.name] = metrics = collect(run, args.dest)
        (args.dest / f"{run.name}_metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    lines = summary_lines(records) + validation_lines(records)
    (args.dest / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
