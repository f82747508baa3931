"""Out-of-distribution table for in-context linear regression runs (issue 27 (a); Garg et al. §4).

    python experiments/icr_ood_table.py RUN_METRICS.json [...] [--at 5 10] > table.md

The package's evaluator scores the model and least squares on 256 prompts per out-of-distribution variant
(`hf_icl.tasks.function_classes.evaluation.ood_results`: x scaled by 2, noisy in-context labels (σ = 1), a skewed
covariance, every x of a prompt in one orthant). This script redraws exactly those prompts (same sampler, seed
(1234, variant index), count 256) to add averaging and 3-NN on them, and prints, for each variant and each
requested i, the model's error per run (mean ± sd over the runs given) beside least squares, averaging and 3-NN.
"""

from __future__ import annotations

import argparse
import json
import statistics

from hf_icl.tasks.function_classes import OOD_VARIANTS, sample
from hf_icl.tasks.function_classes.evaluation import evaluate_prompts


def baseline_curves(task: str, n_points: int, n_dims: int, count: int = 256, seed: int = 1234) -> dict:
    out = {}
    for index, (name, variant) in enumerate(OOD_VARIANTS.items()):
        prompts = sample(task, count, n_points, n_dims, (seed, index), **variant, input_dim=n_dims)
        scored = evaluate_prompts(task, None, prompts, n_dims, {}, 64, ("averaging", "3_nearest_neighbors"))
        out[name] = scored["curves"]
    return out


def fmt(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{statistics.mean(values):.3f} ± {statistics.stdev(values):.3f}"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("metrics", nargs="+")
    parser.add_argument("--at", type=int, nargs="+", default=None, help="numbers of in-context examples i")
    args = parser.parse_args(argv)
    runs = [json.load(open(path)) for path in args.metrics]
    facts = runs[0]["test"]["task_facts"]
    task, d, n = runs[0]["task"], facts["n_dims"], facts["n_points"]
    at = args.at or [d, 2 * d]
    extra = baseline_curves(task, n, d)
    print(f"{task}, d = {d}, N = {n}; {len(runs)} run(s); 256 prompts per variant; model mean ± sd over runs\n")
    print("| prompts | i | model | least squares | averaging | 3-NN |")
    print("|---|---|---|---|---|---|")
    variants = ["in distribution (test split)", *OOD_VARIANTS]
    for name in variants:
        for i in at:
            if name in OOD_VARIANTS:
                model = [r["test"]["ood"][name]["curves"]["model"][i] for r in runs]
                ls = runs[0]["test"]["ood"][name]["curves"]["least_squares"][i]
                avg, knn = extra[name]["averaging"][i], extra[name]["3_nearest_neighbors"][i]
            else:
                curves = runs[0]["test"]["curves"]
                model = [r["test"]["curves"]["model"][i] for r in runs]
                ls, avg, knn = curves["least_squares"][i], curves["averaging"][i], curves["3_nearest_neighbors"][i]
            print(f"| {name} | {i} | {fmt(model)} | {ls:.2g} | {avg:.3f} | {knn:.3f} |")


if __name__ == "__main__":
    main()
