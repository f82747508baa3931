"""The GPU check's CPU side: its dry run (imports, arguments, the training command's arguments, the plan), its
one-line argument errors, the switch that turns every guarded kernel off, and how it reads the 2-gram line."""

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import gpu_check  # noqa: E402


def test_the_dry_run_plans_every_step_and_runs_nothing(tmp_path):
    out = tmp_path / "gpu.json"
    command = [sys.executable, "benchmarks/gpu_check.py", "--dry-run", "--output", str(out)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    for step in gpu_check.STEPS:
        assert f"{step} (≤ " in done.stdout
    assert "4 steps planned, nothing run" in done.stdout and not out.exists()
    assert sum(gpu_check.LIMITS.values()) <= 8 * 60  # ready to run in at most 8 minutes


def test_bad_arguments_fail_in_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit):
        gpu_check.parse_args(["--steps", "device,warp"])
    assert "argument --steps: 'warp' is not one of: device, cuda_tests, step_times, train" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        gpu_check.parse_args(["--wheels", str(tmp_path / "none")])
    assert "is not a folder (make it with --prepare-wheels)" in capsys.readouterr().err


def test_pure_pytorch_switches_every_guarded_kernel_off_and_back():
    before = {(m, n): getattr(importlib.import_module(m), n) for m, names in gpu_check.GUARDED.items() for n in names}
    with gpu_check.pure_pytorch():
        for (module, name), _ in before.items():
            assert not getattr(importlib.import_module(module), name)
    assert before == {(m, n): getattr(importlib.import_module(m), n) for (m, n) in before}


def test_the_two_gram_line_is_read_from_the_validation_history():
    metrics = {"validation": {"baselines": {"2-gram (paper)": {"tvd": 0.33}}},
               "train": {"validation_history": [{"step": 100, "tvd": 0.70}, {"step": 200, "tvd": 0.32}]}}  # fmt: skip
    assert gpu_check.first_step_past(metrics, "2-gram (paper)") == 200
    metrics["train"]["validation_history"] = [{"step": 100, "tvd": 0.70}]
    assert gpu_check.first_step_past(metrics, "2-gram (paper)") is None
