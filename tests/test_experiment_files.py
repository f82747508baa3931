"""Every committed experiment file parses: each run config (`experiments/**/*.yaml` outside `sweeps/` and the
Accelerate launcher files of `accelerate/`, paper-scale GPU configs included) as `train.py --config` reads it, and each
`experiments/sweeps/*.yaml` down to every point's checked run settings (what `python -m hf_icl.sweep` does before it
starts a run), so a config or spec that stops matching the code fails here rather than in a user's hands."""

from pathlib import Path

import pytest

from hf_icl.sweep import check_points, expand, load_spec
from hf_icl.training.arguments import parse_args

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


RUN_CONFIGS = sorted(
    path
    for path in EXPERIMENTS.rglob("*.yaml")
    if path.relative_to(EXPERIMENTS).parts[0] not in {"sweeps", "accelerate"}
)


def test_run_configs_are_found():
    assert {path.parent.name for path in RUN_CONFIGS} >= {"configs", "paper", "slowfast_paper", "slowfast_cpu"}


@pytest.mark.parametrize("path", RUN_CONFIGS, ids=lambda p: str(p.relative_to(EXPERIMENTS)))
def test_committed_config_parses(path):
    args = parse_args(["--config", str(path)])
    assert args.task and (args.max_steps or args.epochs)


@pytest.mark.parametrize("path", sorted((EXPERIMENTS / "sweeps").glob("*.yaml")), ids=lambda p: p.name)
def test_committed_sweep_spec_expands_to_valid_points(path):
    points = expand(load_spec(path))
    check_points(points)
    assert points and all(point.settings["task"] for point in points)


RESULTS = EXPERIMENTS.parent / "docs" / "results"
RECIPES = {  # a config named as the recipe of committed runs -> those runs' metrics, one per seed
    "configs/parity_regular_gpt_cpu.yaml": (
        "length_generalization/p2_parity_curriculum/steps12000-seed{seed}_metrics.json"
    ),
    "configs/copy_mamba_cpu.yaml": "length_generalization/copy/seed{seed}-mamba_L2_8000_metrics.json",
    "configs/copy_mamba_cpu_3layer.yaml": "length_generalization/copy/seed{seed}-mamba_state64_metrics.json",
}


@pytest.mark.parametrize("config", sorted(RECIPES))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_recipe_config_trains_exactly_its_committed_runs(config, seed):
    """`train.py --config C --seed S` has every training setting of the committed run it names (so the committed
    seeds are what the config trains)."""
    import json

    from hf_icl.training.arguments import setting_differences

    saved = json.loads((RESULTS / RECIPES[config].format(seed=seed)).read_text())["run_config"]
    current = parse_args(["--config", str(EXPERIMENTS / config), "--seed", str(seed)]).to_dict()
    assert setting_differences(saved, current) == {}
    assert saved["seed"] == seed and saved["architecture"] == current["architecture"]
