"""`experiments/icr_collect.py`: a sweep that joins an experiment folder collected before counts each run once."""

import json
from pathlib import Path

import pytest
from script_loader import load_script


@pytest.fixture(scope="module")
def icr_collect():
    return load_script("experiments/icr_collect.py")


def write_run(folder: Path, architecture: str, error: float) -> None:
    """A finished decision-tree run's metrics.json, reduced to the fields the collector reads."""
    folder.mkdir(parents=True)
    metrics = {
        "architecture": architecture,
        "task": "decision_tree",
        "num_parameters": 1000,
        "run_config": {"max_steps": 10},
        "train": {"cpu_time_s": 1.0, "history": []},
        "test": {
            "curves": {"model": [1.0, error]},
            "task_facts": {"n_dims": 5, "n_points": 2},
            "examples": [1],
            "model": {"error_final": error, "final_examples": 1},
            "baselines": {"averaging": {"error_final": 1.0}},
        },
    }
    (folder / "metrics.json").write_text(json.dumps(metrics))


def rows_of(summary: Path, name: str) -> list[str]:
    return [line for line in summary.read_text().splitlines() if line.startswith(f"| {name} |")]


def test_a_sweep_joining_its_collected_experiment_counts_each_run_once(icr_collect, tmp_path):
    first, second, dest = tmp_path / "sweep_a", tmp_path / "sweep_b", tmp_path / "experiment"
    write_run(first / "variant=tree", "transformer", 0.4)
    write_run(second / "variant=tree", "mamba", 0.3)
    icr_collect.main([str(first), str(second), "--dest", str(dest)])
    # the second sweep's run finishes again (a rerun), then the experiment is re-collected with the sweep beside it
    (second / "variant=tree" / "metrics.json").unlink()
    (second / "variant=tree").rmdir()
    write_run(second / "variant=tree", "mamba", 0.2)
    icr_collect.main([str(dest), str(second), "--dest", str(dest)])

    summary = dest / "summary.md"
    assert len(rows_of(summary, "architecture=mamba,variant=tree")) == 1
    assert len(rows_of(summary, "architecture=transformer,variant=tree")) == 1
    assert "| 0.200 |" in rows_of(summary, "architecture=mamba,variant=tree")[0]  # the last root's run is kept
    assert "Over seeds" not in summary.read_text()  # one run per point: no group of two
    copied = json.loads((dest / "architecture=mamba,variant=tree" / "metrics.json").read_text())
    assert copied["test"]["model"]["error_final"] == 0.2
