"""Every committed experiment file parses: each `experiments/configs/*.yaml` as `train.py --config` reads it, and each
`experiments/sweeps/*.yaml` down to every point's checked run settings (what `python -m hf_icl.sweep` does before it
starts a run), so a config or spec that stops matching the code fails here rather than in a user's hands."""

from pathlib import Path

import pytest

from hf_icl.sweep import check_points, expand, load_spec
from hf_icl.training.arguments import parse_args

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


@pytest.mark.parametrize("path", sorted((EXPERIMENTS / "configs").glob("*.yaml")), ids=lambda p: p.name)
def test_committed_config_parses(path):
    args = parse_args(["--config", str(path)])
    assert args.task and args.max_steps


@pytest.mark.parametrize("path", sorted((EXPERIMENTS / "sweeps").glob("*.yaml")), ids=lambda p: p.name)
def test_committed_sweep_spec_expands_to_valid_points(path):
    points = expand(load_spec(path))
    check_points(points)
    assert points and all(point.settings["task"] for point in points)
