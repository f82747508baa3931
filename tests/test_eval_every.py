"""`--eval-every K`: validation curves during training, the model's numbers only, with the training clocks."""

import json

import pytest

from hf_icl.training import main

RUN = [
    "--architecture", "transformer",
    "--preset", "tiny", "--max-steps", "6", "--warmup-steps", "1", "--n-train", "100", "--task-option", "n_test=8",
       "--task-option", "n_validation=8", "--report-to", "none", "--threads", "1"]  # fmt: skip


def test_validation_history_is_recorded_and_matches_the_final_evaluation(tmp_path):
    metrics = main([*RUN, "--eval-every", "3", "--output-dir", str(tmp_path / "run")])
    curve = metrics["train"]["validation_history"]
    assert [point["step"] for point in curve] == [3, 6]
    assert set(curve[0]) == {"step", "train_wall_s", "train_cpu_s", "accuracy", "tvd"}  # no baselines
    assert 0 < curve[0]["train_wall_s"] < curve[1]["train_wall_s"] <= metrics["train"]["wall_time_s"]
    assert curve[1]["accuracy"] == pytest.approx(metrics["validation"]["model"]["accuracy"], abs=1e-12)
    assert curve[1]["tvd"] == pytest.approx(metrics["validation"]["model"]["tvd"], abs=1e-12)
    saved = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert saved["train"]["validation_history"] == curve


def test_without_eval_every_there_is_no_curve(tmp_path):
    metrics = main([*RUN, "--output-dir", str(tmp_path / "run")])
    assert metrics["train"]["validation_history"] == []


def test_eval_every_must_be_positive(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([*RUN, "--eval-every", "0", "--output-dir", str(tmp_path / "run")])
    assert exit_info.value.code == 2
    assert "--eval-every" in capsys.readouterr().err and not (tmp_path / "run").exists()
