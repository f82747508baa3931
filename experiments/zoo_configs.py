"""Turn a finished zoo search into the model's training config, by the rule its spec wrote down before any trial.

    python experiments/zoo_configs.py outputs/sweeps/regbench-zoo-search-retnet [...] \
        --output experiments/configs/regbench_zoo --trials docs/results/regbench_zoo_search \
        --ngram-heads transformer retnet gla --seeds-spec experiments/sweeps/regbench_zoo_seeds.yaml

The rule (experiments/sweeps/regbench_zoo_search/common.yaml): the search's selected trial (`best.yaml`, optuna's
best complete trial on validation accuracy) becomes `<output>/<architecture>.yaml` with the recipe's steps
(experiments/configs/regbench_cpu.yaml: 3,000) on one thread, or, where the trial's CPU seconds per step (measured on
one thread) put those steps over 30 minutes of that thread, the most steps (a multiple of 500) that fit, with a 5 %
margin on the trial's cost (`COST_MARGIN`). One thread
per run, not two: a second thread sped the linear Transformer's selected setting up about 1.3x, not 2x (about 0.8 s
per step against 1.02), so a budget of two cores' CPU seconds let a 2-thread run take about 40 minutes; on one thread
each run fits its 30 minutes, and two seeds train side by side. The keys the search set for its trials only
(`max_steps`, `eval_every`, `threads`, `checkpoint_every`) go back to the recipe's values. An architecture whose P1
row has n-gram heads (`--ngram-heads ARCH ...`) also gets `<architecture>_ngh123.yaml`: the same setting with
NGH₁^(1,2,3) (`ngram_heads: "1:1,2,3"`), whose steps follow the same budget at the row's own cost where
`--ngram-heads-cost ARCH=S` gives it (CPU s per step with the heads, measured: the heads cost the RetNet row about a
sixth more than its base, so the base's steps took it over 30 minutes). Each search's `trials.md` and `trials.json`
are copied to `<trials>/<architecture>/`, so the committed config traces to its committed trials. A search with no
complete trial is an error: there is nothing to select yet. `--seeds-spec` (re)writes the one sweep spec that trains
every config of `--output` with seeds 0-2 as a single experiment (each variant names its config file), since the
report pairs the runs of one experiment only.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import yaml

RECIPE = Path("experiments/configs/regbench_cpu.yaml")
THREADS = 1
BUDGET_CPU_S = 30 * 60
"""30 minutes of the run's one thread, in CPU seconds (the contributor rules' budget for one CPU run on its cores)."""
STEP_GRAIN = 500
COST_MARGIN = 1.05
"""Steps must fit the budget at the trial's cost times this: a seed's step cost drifts above its trial's (Mamba's seeds
ran at 1.219 / 1.230 CPU s per step against its trial's 1.152, +6 %, which took 1,500 steps over 30 minutes)."""
SEARCH_ONLY_KEYS = ("max_steps", "eval_every", "threads", "checkpoint_every")
NGRAM_HEADS = "1:1,2,3"  # P1 §6 / Table 1: NGH^1, NGH^2, NGH^3 after layer 1, as --ngram-heads reads it


def budget_steps(recipe_steps: int, cpu_s_per_step: float) -> int:
    """The recipe's steps, or the most multiple of `STEP_GRAIN` steps that fit `BUDGET_CPU_S` at this cost with its
    `COST_MARGIN`."""
    cost = cpu_s_per_step * COST_MARGIN
    if recipe_steps * cost <= BUDGET_CPU_S:
        return recipe_steps
    steps = int(BUDGET_CPU_S / cost) // STEP_GRAIN * STEP_GRAIN
    if steps < STEP_GRAIN:
        raise ValueError(f"{cpu_s_per_step:.2f} CPU s per step leaves fewer than {STEP_GRAIN} steps in the budget")
    return steps


def ngram_heads_cost(item: str, ngram_heads) -> tuple[str, float]:
    """`ARCH=S` as (ARCH, S), ARCH one of `--ngram-heads` and S > 0 CPU s per step."""
    architecture, _, text = item.partition("=")
    try:
        cost = float(text)
    except ValueError:
        cost = 0.0
    if architecture not in ngram_heads or not cost > 0:  # also refuses nan
        raise ValueError(f"--ngram-heads-cost {item!r}: expected ARCH=S with ARCH one of --ngram-heads "
                         f"({', '.join(ngram_heads) or 'none given'}) and S > 0 CPU s per step")  # fmt: skip
    return architecture, cost


def selected_trial(search: Path) -> dict:
    """The trial `best.yaml` names, from `trials.json`."""
    best = (search / "best.yaml").read_text()
    header = best.splitlines()[0]
    if "(trial " not in header:
        raise ValueError(f"{search / 'best.yaml'}: its first line does not name the selected trial: {header!r}")
    number = int(header.split("(trial ")[1].split(")")[0])
    trials = json.loads((search / "trials.json").read_text())
    trial = next((t for t in trials if t["trial"] == number), None)
    if trial is None or trial["state"] != "complete":
        raise ValueError(f"{search}: trial {number} is not a complete trial of trials.json")
    return trial


def zoo_config(search: Path, recipe: dict) -> tuple[dict, dict, int]:
    """(the config, the selected trial, its steps) for one finished search folder."""
    if not (search / "best.yaml").is_file():
        raise ValueError(f"{search}: no best.yaml (the search has no complete trial yet)")
    trial = selected_trial(search)
    config = yaml.safe_load((search / "best.yaml").read_text())
    for key in SEARCH_ONLY_KEYS:
        config.pop(key, None)
        if key in recipe:
            config[key] = recipe[key]
    config["max_steps"] = budget_steps(recipe["max_steps"], trial["train_cpu_s"] / trial["steps"])
    config["threads"] = THREADS
    return config, trial, config["max_steps"]


def header(search: Path, trial: dict, steps: int, ngram_heads: bool, heads_cost: float | None = None) -> str:
    """The comment above a written config: where its setting comes from and how to train it."""
    validation = ", ".join(f"{k} {v:.4f}" for k, v in trial["validation"].items())
    per_step = trial["train_cpu_s"] / trial["steps"]
    setting = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in trial["setting"].items())
    lines = [
        f"The fair zoo (issue 50): trial {trial['trial']} of the search in {search} (spec:",
        "experiments/sweeps/regbench_zoo_search/), selected by its rule on the validation split:",
        f"  {setting}",
        f"  validation at step {trial['steps']}: {validation}; {per_step:.3f} CPU s per step on one thread.",
        f"Steps: {steps} (the recipe's, {RECIPE.name}, or the most that fit 30 minutes of one thread at "
        f"{COST_MARGIN}x that cost)."
        if heads_cost is None
        else f"Steps: {steps} (the recipe's, or the most that fit 30 minutes at {COST_MARGIN}x this row's "
        f"{heads_cost:.3f} s/step).",
        "Written by experiments/zoo_configs.py; do not edit by hand.",
    ]
    if ngram_heads:
        lines.append("With P1 §6's NGH₁^(1,2,3) added (n-gram-head rows take their base model's selected setting).")
    lines.append("  accelerate launch train.py --config <this file> --seed S   # S = 0, 1, 2")
    return "".join(f"# {line}\n" for line in lines)


def seeds_spec(configs: list[Path]) -> str:
    """The sweep spec that trains every zoo config with seeds 0-2 as one experiment (the report pairs the runs of one
    experiment only), one variant per config file; each point runs the config as it is (one thread), so two points
    at a time on two cores."""
    lines = [
        "# The fair zoo's three seeds per model (issue 50, item 3): one variant per experiments/configs/regbench_zoo/",
        "# file, each trained as `accelerate launch train.py --config <file> --seed S` would. Written by",
        "# experiments/zoo_configs.py from the configs present; do not edit by hand. Each run uses one thread, so two",
        "# train side by side on two cores:",
        "#   python -m hf_icl.sweep experiments/sweeps/regbench_zoo_seeds.yaml --jobs 2",
        "#   python -m hf_icl.report outputs/sweeps/regbench-zoo-seeds --collect docs/results/regbench_zoo \\",
        "#       --output outputs/sweeps/regbench-zoo-seeds/report   # the runs into docs/results, the sub-report not",
        "output_root: outputs/sweeps/regbench-zoo-seeds",
        "grid:",
        "  variant:",
    ]
    lines += [f"    {config.stem}: {{config: {config}}}" for config in sorted(configs)]
    lines.append("  seed: [0, 1, 2]")
    return "\n".join(lines) + "\n"


def write(path: Path, text: str) -> None:
    """Atomic write: a reader never sees half a config."""
    partial = path.with_suffix(path.suffix + ".partial")
    partial.write_text(text)
    partial.replace(path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("searches", type=Path, nargs="+", help="finished search folders (outputs/sweeps/...)")
    parser.add_argument("--output", type=Path, required=True, help="folder of the configs (<architecture>.yaml)")
    parser.add_argument("--trials", type=Path, required=True, help="folder the trials tables are copied to")
    parser.add_argument("--ngram-heads", nargs="*", default=(), metavar="ARCH",
                        help="architectures that also get <architecture>_ngh123.yaml")  # fmt: skip
    parser.add_argument("--ngram-heads-cost", nargs="*", default=(), metavar="ARCH=S",
                        help="CPU s per step of ARCH's row with n-gram heads, measured on one thread: that row's "
                             "steps fit the budget at this cost (default: the base trial's cost)")  # fmt: skip
    parser.add_argument("--recipe", type=Path, default=RECIPE, help=f"the shared recipe (default {RECIPE})")
    parser.add_argument("--seeds-spec", type=Path, default=None, metavar="FILE",
                        help="also (re)write FILE: a sweep spec of every --output config, seeds 0-2")  # fmt: skip
    args = parser.parse_args(argv)
    recipe = yaml.safe_load(args.recipe.read_text())
    written = []
    try:
        heads_costs = dict(ngram_heads_cost(item, args.ngram_heads) for item in args.ngram_heads_cost)
        built = [(search, *zoo_config(search, recipe)) for search in args.searches]  # every search checked first
    except (ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    args.output.mkdir(parents=True, exist_ok=True)
    for search, config, trial, _ in built:
        architecture = config["architecture"]
        variants = [(architecture, config, False)]
        if architecture in args.ngram_heads:
            with_heads = {**config, "overrides": {**config.get("overrides", {}), "ngram_heads": NGRAM_HEADS}}
            if architecture in heads_costs:
                with_heads["max_steps"] = budget_steps(recipe["max_steps"], heads_costs[architecture])
            variants.append((f"{architecture}_ngh123", with_heads, True))
        for name, body, heads in variants:
            path = args.output / f"{name}.yaml"
            cost = heads_costs.get(architecture) if heads else None
            text = header(search, trial, body["max_steps"], heads, cost).replace("<this file>", str(path))
            write(path, text + yaml.safe_dump(body, sort_keys=False, allow_unicode=True))
            written.append(path)
        target = args.trials / architecture
        target.mkdir(parents=True, exist_ok=True)
        for table in ("trials.md", "trials.json", "best.yaml"):
            shutil.copy(search / table, target / table)
    if args.seeds_spec is not None:
        write(args.seeds_spec, seeds_spec(list(args.output.glob("*.yaml"))))
        written.append(args.seeds_spec)
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
