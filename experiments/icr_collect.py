"""Collect in-context regression runs (issue 27): per-run metrics.json copies plus one summary.md table.

    python experiments/icr_collect.py RUNS_ROOT [RUNS_ROOT ...] --dest docs/results/regression/<dir> [--curves]

Every folder under RUNS_ROOT holding a `metrics.json` is one run. For each run the table gives the training CPU
seconds (`train.cpu_time_s`), the first logged step whose training loss (unnormalised MSE, ≈ d on the plateau) is
below d/2 ("escape"), the model's normalised error at i = 1, d, 2d and the last i, and whether the run passes the
issue-27 bar: error at i = 2d ≤ 0.10 and below averaging and 3-NN at every i ≥ 3. The largest gap to least squares
before i = d says how closely the curve follows its shape. Regression runs also get their out-of-distribution errors
at the last i beside least squares'. The other regression tasks of P5 Table 1 (trees, 2-layer networks, sparse and
outlier regression, chain-of-thought) get one row each: the model's error at the last example beside every baseline
the task scores on the same prompts (chain-of-thought: on the model's own steps, with the teacher-forced steps
beside it). Sparse-parity runs get their final-example accuracy, beside the exact GF(2)
solver's and the best accuracy from x alone (the context-free Bayes rule, by enumeration over x). `--curves` also
copies each run's in_context_curves.png. With several roots (one sweep per architecture over the same points, one
experiment), each run is named `architecture=A,<point>`; a root may be a folder collected before (its runs keep
their names), so another architecture's sweep joins an experiment whose own sweep outputs are gone. Group
statistics (mean ± sd over seeds) are printed for points whose names differ only in `seed=`.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import re
import shutil
import statistics
from pathlib import Path


def runs_under(root: Path) -> list[Path]:
    found = []
    for path in sorted(root.rglob("metrics.json")):
        metrics = json.loads(path.read_text())
        if "train" in metrics and "test" in metrics and "curves" in metrics["test"]:
            found.append(path.parent)
    return found


def named_runs(roots: list[str]) -> dict[str, tuple[Path, dict]]:
    """Every run under the roots by its name in the experiment folder, each name once, with its metrics.

    Several sweeps (one per architecture, the same points) make one experiment: their runs are named
    `architecture=A,<point>`. A folder collected before (named so already, possibly the destination itself) keeps its
    name, so a sweep can join it. A run found twice (its collected copy and its sweep folder) is one run: the last
    root's copy is kept, so a sweep listed after the experiment folder refreshes its runs without counting them twice.
    """
    named = {}
    for run in (run for root in map(Path, roots) for run in runs_under(root)):
        metrics = json.loads((run / "metrics.json").read_text())
        prefixed = len(roots) > 1 and not run.name.startswith("architecture=")
        named[f"architecture={metrics['architecture']},{run.name}" if prefixed else run.name] = (run, metrics)
    return named


def context_free_accuracy(d: int, k: int) -> float:
    """Sparse parity without the context: the best accuracy from x alone, S uniform over the k-subsets of d
    coordinates (predict the sign most subsets give x), by enumeration over x ∈ {±1}^d."""
    subsets = list(itertools.combinations(range(d), k))
    total = 0.0
    for x in itertools.product((-1, 1), repeat=d):
        positive = sum(math.prod(x[j] for j in subset) == 1 for subset in subsets) / len(subsets)
        total += max(positive, 1 - positive)
    return total / 2**d


def dims_at(curriculum: list[str], step: int, final: int) -> int:
    """n_dims of the training batches at `step` under the run's `n_dims=START:END:INC:EVERY` curriculum."""
    for text in curriculum or []:
        field, _, spec = text.partition("=")
        if field == "n_dims":
            start, end, increment, every = (float(v) for v in spec.split(":"))
            return int(min(end, start + increment * (step // every)))
    return final


def escape_step(history: list[dict], d: int, curriculum=()) -> int | None:
    """First logged step at the final d whose training loss is below d/2 (the plateau, predicting 0, sits at d)."""
    for row in history:
        if dims_at(curriculum, row["step"], d) == d and row.get("loss", float("inf")) < d / 2:
            return row["step"]
    return None


def regression_row(metrics: dict) -> dict:
    test = metrics["test"]
    d = test["task_facts"]["n_dims"]
    curves = test["curves"]
    model = curves["model"]
    row = {
        "d": d,
        "N": test["task_facts"]["n_points"],
        "i1": model[1],
        "id": model[d] if d < len(model) else float("nan"),
        "i2d": model[2 * d] if 2 * d < len(model) else float("nan"),
        "last": model[-1],
    }
    # least squares' shape: (d - i)/d down to 0 at i = d; the largest gap before d says how closely the model tracks it
    row["ls_gap"] = max(abs(model[i] - curves["least_squares"][i]) for i in range(min(d, len(model))))
    worse = [i for i in range(3, len(model)) if not (model[i] < curves["averaging"][i]
                                                     and model[i] < curves["3_nearest_neighbors"][i])]
    row["worse_at"] = worse
    row["pass"] = bool(2 * d < len(model) and model[2 * d] <= 0.10 and not worse)
    row["ood"] = {name: (v["curves"]["model"][-1], v["curves"]["least_squares"][-1])
                  for name, v in test.get("ood", {}).items()}
    row["escape"] = escape_step(metrics["train"]["history"], d, metrics["run_config"].get("curriculum"))
    return row


def suite_row(metrics: dict) -> dict:
    """A Table-1 task other than linear regression: the error at the last example, model beside the baselines."""
    test = metrics["test"]
    baselines = {name: values["error_final"] for name, values in test["baselines"].items()}
    best = min(baselines, key=baselines.get)
    return {
        "task": metrics["task"],
        "facts": test["task_facts"],
        "i": test["model"].get("final_examples", test["examples"][-1]),
        "model": test["model"]["error_final"],
        "teacher_forced": test.get("model_teacher_forced_steps", {}).get("error_final"),
        "baselines": baselines,
        "best": best,
        "below": [name for name, value in baselines.items() if test["model"]["error_final"] < value],
    }


def suite_lines(rows: list) -> list[str]:
    lines = ["", "P5 Table 1 tasks: normalised error at the final example (i = scored examples before it; outlier "
             "tasks: the largest i that 90 % of the prompts reach), the model beside every baseline on the same "
             "prompts (lower is better).", "",
             "| run | task | d, N | i | params | steps | CPU s | model | teacher-forced steps | baselines | "
             "model below |", "|---" * 11 + "|"]  # fmt: skip
    for name, params, steps, cpu, row in rows:
        facts = row["facts"]
        cells = ", ".join(f"{k} {v:.3f}" for k, v in row["baselines"].items())
        forced = "–" if row["teacher_forced"] is None else f"{row['teacher_forced']:.3f}"
        below = ", ".join(row["below"]) or "none"
        lines.append(f"| {name} | {row['task']} | {facts['n_dims']}, {facts['n_points']} | {row['i']} | {params:,} | "
                     f"{steps} | {cpu:.0f} | {row['model']:.3f} | {forced} | {cells} | {below} |")  # fmt: skip
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("roots", nargs="+")
    parser.add_argument("--dest", required=True)
    parser.add_argument("--curves", action="store_true")
    parser.add_argument("--title", default="")
    args = parser.parse_args(argv)
    dest = Path(args.dest)
    dest.mkdir(parents=True, exist_ok=True)
    lines = [f"# {args.title or dest.name}", "", "Collected by `python experiments/icr_collect.py "
             + " ".join(args.roots) + f" --dest {args.dest}`. CPU s = `train.cpu_time_s` (shared 2-core machine, "
             "1 thread per run). Errors are the package's normalised squared error (test split, 1,280 prompts).", ""]
    regression, parity, suite, groups, parity_tasks = [], [], [], {}, {}
    for name, (run, metrics) in named_runs(args.roots).items():
        out = dest / name
        out.mkdir(parents=True, exist_ok=True)
        for file in ["metrics.json"] + (["in_context_curves.png"] if args.curves else []):
            if (run / file).exists() and (out / file).resolve() != (run / file).resolve():
                shutil.copy(run / file, out / file)
        steps = metrics["run_config"]["max_steps"]
        cpu = metrics["train"]["cpu_time_s"]
        test = metrics["test"]
        key = re.sub(r"(^|,)seed=\d+", "", name)
        if "accuracy_final" in test.get("model", {}):
            acc = test["model"]["accuracy_final"]
            parity.append((name, metrics["num_parameters"], steps, cpu, test["model"]["accuracy_mean"], acc))
            facts = metrics["task_facts"]
            solver = test["baselines"]["gf2_parity"]["accuracy_final"]
            parity_tasks[(facts["n_dims"], facts["options"]["k"])] = solver
            groups.setdefault(key, []).append(acc)
            continue
        if metrics["task"] != "linear_regression":
            row = suite_row(metrics)
            suite.append((name, metrics["num_parameters"], steps, cpu, row))
            groups.setdefault(key, []).append(row["model"])
            continue
        row = regression_row(metrics)
        regression.append((name, metrics["num_parameters"], steps, cpu, row))
        groups.setdefault(key, []).append(row["i2d"])
    if regression:
        lines += ["| run | params | steps | CPU s | escape step | err i=1 | max \\|err − LS\\|, i < d | err i=d | "
                  "err i=2d | err last | not below avg/3-NN at i | pass |", "|---" * 12 + "|"]
        for name, params, steps, cpu, row in regression:
            worse = ",".join(map(str, row["worse_at"])) or "–"
            lines.append(f"| {name} | {params:,} | {steps} | {cpu:.0f} | {row['escape']} | {row['i1']:.3f} | "
                         f"{row['ls_gap']:.3f} | {row['id']:.3f} | {row['i2d']:.4f} | {row['last']:.4f} | {worse} | "
                         f"{'yes' if row['pass'] else 'no'} |")
        if any(row["ood"] for *_, row in regression):
            names = sorted({k for *_, row in regression for k in row["ood"]})
            lines += ["", "Out-of-distribution prompts (error at the last i: model / least squares):", "",
                      "| run | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
            for name, *_, row in regression:
                cells = [f"{row['ood'][k][0]:.3f} / {row['ood'][k][1]:.2g}" if k in row["ood"] else "–"
                         for k in names]
                lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if parity:
        lines += ["| run | params | steps | CPU s | accuracy (mean over i) | accuracy (final example) |",
                  "|---|---|---|---|---|---|"]
        for name, params, steps, cpu, mean, final in parity:
            lines.append(f"| {name} | {params:,} | {steps} | {cpu:.0f} | {mean:.4f} | {final:.4f} |")
        for (d, k), solver in sorted(parity_tasks.items()):
            lines += ["", f"d = {d}, k = {k}: the exact GF(2) solver scores {solver:.4f} on the final example; the "
                      f"best accuracy from x alone (no context) is {context_free_accuracy(d, k):.5f}."]
    if suite:
        lines += suite_lines(suite)
    multi = {k: v for k, v in groups.items() if len(v) > 1}
    if multi:
        kinds = [("linear regression: error at i = 2d", regression), ("other tasks: error at the final example", suite),
                 ("sparse parity: accuracy at the final example", parity)]
        label = "; ".join(text for text, runs in kinds if runs)
        lines += ["", f"Over seeds ({label}): mean ± sd (n)", "", "| point | mean | sd | n |", "|---|---|---|---|"]
        for key, values in multi.items():
            lines.append(f"| {key.strip(',') or 'all'} | {statistics.mean(values):.4f} | "
                         f"{statistics.stdev(values):.4f} | {len(values)} |")
    (dest / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
