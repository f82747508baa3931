"""P1 §5.1's 2-gram-head analysis on the exact token-mixing maps of recurrent models trained on RegBench.

    python experiments/ngram_maps_collect.py outputs/sweeps/ngram-maps-regbench --dest docs/results/ngram_maps

For every run's `model/` it runs `python -m hf_icl.analysis attention` (per head or channel: the mass each map row
puts on keys that follow the current k-gram, rows of non-softmax maps read as shares of |M|, over 100 test rows) and
summarises: per layer, the head with the most `follows_2gram` mass, its ratio to the uniform causal head's, and
the same for `follows_1gram` (induction) and `previous_token`. A recurrent model "forms an n-gram-like head" here
when some head puts at least twice the chance mass on the keys after the current 2-gram (P1 Fig. 3's Transformer
head puts most of its mass there). Writes ngram_maps.json and ngram_maps.md.

The control is the Transformer of the same recipe, whose softmax maps were analysed the same way
(docs/results/analysis/attention/transformer_rope_recipe/attention.json, `--control`): the measurement can say
"yes" on a model that is known to have 2-gram heads, so a "no" for a recurrent model is a finding, not a blind probe.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

SIGNATURES = ("follows_2gram", "follows_1gram", "previous_token")
THRESHOLD = 2.0  # mass / uniform mass of the best head
DEFAULT_CONTROL = Path("docs/results/analysis/attention/transformer_rope_recipe/attention.json")


def analyse(model_dir: Path, out: Path, rows: int) -> dict:
    """The analysis of one checkpoint, run once: an `attention.json` already in `out` is read, not recomputed."""
    if (out / "attention.json").exists():
        return json.loads((out / "attention.json").read_text())
    out.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "hf_icl.analysis", "attention", "--checkpoint", str(model_dir),
               "--output", str(out), "--n-rows", str(rows), "--threads", "1"]  # fmt: skip
    subprocess.run(command, check=True)
    return json.loads((out / "attention.json").read_text())


def summarise(result: dict) -> dict:
    summary = {}
    for name in SIGNATURES:
        entry = result["signatures"][name]
        uniform = entry["uniform"]
        per_layer = {layer: max(heads) for layer, heads in entry["per_head"].items()}
        best_layer = max(per_layer, key=per_layer.get)
        summary[name] = {
            "best_per_layer": per_layer,
            "best_layer": best_layer,
            "best": per_layer[best_layer],
            "uniform": uniform,
            "ratio": per_layer[best_layer] / uniform if uniform else float("nan"),
        }
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", type=Path, help="a sweep output_root, or a folder of run folders with model/")
    parser.add_argument("--dest", type=Path, default=Path("docs/results/ngram_maps"))
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--control", type=Path, action="append", metavar="ATTENTION_JSON",
                        help="an already computed attention.json listed as a control row (repeatable; default: "
                             f"{DEFAULT_CONTROL})")  # fmt: skip
    args = parser.parse_args()
    results = {}
    for control in args.control or [DEFAULT_CONTROL]:
        raw = json.loads(control.read_text())
        results[f"control: {control.parent.name}"] = {"architecture": raw["architecture"], "source": str(control),
                                                      "signatures": summarise(raw)}  # fmt: skip
    for model_dir in sorted(args.root.glob("*/model")):
        run = model_dir.parent.name
        raw = analyse(model_dir, args.dest / run, args.rows)
        results[run] = {"architecture": raw["architecture"], "signatures": summarise(raw)}
        if (model_dir.parent / "metrics.json").exists():  # the run's own test score, beside its maps
            test = json.loads((model_dir.parent / "metrics.json").read_text())["test"]["model"]
            results[run]["test"] = {"accuracy": test["accuracy"], "tvd": test["tvd"]}
    (args.dest / "ngram_maps.json").write_text(json.dumps(results, indent=2) + "\n")
    header = "| run | test accuracy / TVD | best 2-gram head (layer) | mass / uniform | induction / uniform |"
    lines = [header + " previous token / uniform | n-gram-like head? |", "|---|---|---|---|---|---|---|"]
    for run, entry in results.items():
        s = entry["signatures"]
        verdict = "yes" if s["follows_2gram"]["ratio"] >= THRESHOLD else "no"
        score = f"{entry['test']['accuracy']:.3f} / {entry['test']['tvd']:.3f}" if "test" in entry else "–"
        best = f"{s['follows_2gram']['best']:.3f} (layer {s['follows_2gram']['best_layer']})"
        ratios = " | ".join(f"{s[name]['ratio']:.2f}" for name in SIGNATURES)
        lines.append(f"| {run} | {score} | {best} | {ratios} | {verdict} |")
    (args.dest / "ngram_maps.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
