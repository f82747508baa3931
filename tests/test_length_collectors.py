"""`experiments/copy_collect.py` and `experiments/p2_collect.py`: run names, seeds grouped into settings, and the
accuracy in bands of the longest training string, against hand-computed cases."""

import json
import sys
from pathlib import Path

import pytest
from script_loader import ROOT, load_script


@pytest.fixture(scope="module")
def collectors():
    sys.path.insert(0, str(ROOT / "experiments"))  # p2_collect imports copy_collect as its scripts do
    try:
        yield load_script("experiments/copy_collect.py"), load_script("experiments/p2_collect.py")
    finally:
        sys.path.remove(str(ROOT / "experiments"))
        sys.modules.pop("copy_collect", None)  # imported by name through the path: leave no module behind


def test_run_names_drop_task_and_variant_and_settings_drop_the_seed(collectors):
    copy_collect, _ = collectors
    assert copy_collect.run_name(Path("variant=rope-lr1e-3,seed=2")) == "rope-lr1e-3-seed2"
    assert copy_collect.run_name(Path("task=copy,variant=rope,seed=1")) == "copy-rope-seed1"
    assert copy_collect.family("seed1-rope") == "rope"
    assert copy_collect.family("regular_gpt_K2_8000-seed0") == "regular_gpt_K2_8000"
    assert copy_collect.family("run-s0") == "run"
    assert copy_collect.family("rope") == "rope"  # no seed: its own setting


def test_bands_average_the_lengths_beyond_each_multiple_of_the_training_length(collectors):
    _, p2_collect = collectors
    per_length = {"13": 1.0, "24": 0.5, "25": 0.25, "48": 0.0, "49": 0.2, "100": 0.4}  # L = 12
    assert p2_collect.band_accuracy(per_length, 12, 1, 2) == pytest.approx((1.0 + 0.5) / 2)  # 12 < n <= 24
    assert p2_collect.band_accuracy(per_length, 12, 2, 4) == pytest.approx((0.25 + 0.0) / 2)  # 24 < n <= 48
    assert p2_collect.band_accuracy(per_length, 12, 4, 8) == pytest.approx(0.2)  # 48 < n <= 96
    assert p2_collect.band_accuracy(per_length, 12, 8, None) == pytest.approx(0.4)  # n > 96
    assert p2_collect.band_accuracy({"13": 1.0}, 12, 2, 4) is None  # an empty band is no number


def fake_p2_run(folder: Path, in_range: float, test: float) -> Path:
    folder.mkdir(parents=True)
    metrics = {
        "task": "modular_arithmetic",
        "architecture": "transformer",
        "num_parameters": 1234,
        "train": {"steps": 100, "cpu_time_s": 12.0, "final_loss": 1.0},
        "validation": {"model": {"accuracy_in_train_range": in_range}},
        "test": {"train_max_length": 12, "model": {"accuracy": test}, "per_length": {"13": test, "30": test}},
    }
    (folder / "metrics.json").write_text(json.dumps(metrics))
    return folder


def test_the_summary_gives_each_setting_its_mean_and_sample_sd_over_seeds(collectors, tmp_path, monkeypatch):
    _, p2_collect = collectors
    root = tmp_path / "sweep"
    for seed, (in_range, test) in enumerate([(0.9, 0.2), (1.0, 0.4), (0.95, 0.3)]):
        fake_p2_run(root / f"variant=rope,seed={seed}", in_range, test)
    monkeypatch.setattr(sys, "argv", ["p2_collect.py", str(root), "--output", str(tmp_path / "out")])
    p2_collect.main()
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "| rope | 3 | 0.950 ± 0.050 | 0.300 ± 0.100 |" in summary  # sd with n - 1: sqrt(0.005), sqrt(0.01)
    assert "| rope-seed1 | transformer | 1,234 | 12 | 100 | 12 | 1.000 | 0.400 | 0.400 | 0.400 | – | – |" in summary
    assert sorted(p.name for p in (tmp_path / "out").glob("*_metrics.json")) == [
        f"rope-seed{s}_metrics.json" for s in range(3)
    ]


def test_a_folder_collected_in_parts_keeps_every_run_in_its_summary(collectors, tmp_path, monkeypatch):
    _, p2_collect = collectors
    first, second, out = tmp_path / "first", tmp_path / "second", tmp_path / "out"
    fake_p2_run(first / "variant=rope,seed=0", 0.9, 0.2)
    fake_p2_run(second / "variant=lstm,seed=0", 1.0, 0.4)
    for root in (first, second):  # two sweeps trained apart, collected into one experiment folder
        monkeypatch.setattr(sys, "argv", ["p2_collect.py", str(root), "--output", str(out)])
        p2_collect.main()
    summary = (out / "summary.md").read_text()
    assert "| rope-seed0 | transformer |" in summary  # the first part's row survives the second collection
    assert "| lstm-seed0 | transformer |" in summary
