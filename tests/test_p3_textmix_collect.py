"""`experiments/p3_textmix_collect.py`: each run is analysed on test and on validation, filed under the split it read,
and an analysis of the wrong split (or of both, written before `--split`) is never passed off as either."""

import json
import shutil

import pytest
from script_loader import load_script
from test_textmix_analysis import saved_tiny_model


@pytest.fixture(scope="module")
def collect_script():
    return load_script("experiments/p3_textmix_collect.py")


def fake_run(folder):
    """A run folder: a tiny slow/fast checkpoint and a metrics.json with both splits' losses."""
    saved_tiny_model(folder / "model")
    split = {"model": {"loss": 2.0, "loss_first_excerpt": 1.9, "loss_second_excerpt": 2.1},
             "baselines": {"unigram": {"loss": 3.0}}}  # fmt: skip
    metrics = {"train": {"steps": 10, "cpu_time_s": 1.0}, "test": split, "validation": split}
    (folder / "metrics.json").write_text(json.dumps(metrics))
    return folder


def test_each_run_is_analysed_on_test_and_on_validation(collect_script, tmp_path):
    run, dest = fake_run(tmp_path / "ymodel-seed0"), tmp_path / "collected"
    collect_script.main([str(run), "--dest", str(dest)])
    metrics = json.loads((dest / "ymodel-seed0_metrics.json").read_text())
    for split, folder in (("test", dest / "ymodel-seed0"), ("validation", dest / "ymodel-seed0" / "validation")):
        saved = json.loads((folder / "textmix_analysis.json").read_text())
        assert saved["split"] == split and metrics[split]["textmix"]["split"] == split
        assert metrics[split]["textmix"]["informed"] == saved["informed"]
    assert "| ymodel-seed0 | -1.000 |" in (dest / "summary.md").read_text()  # the validation table's control column

    shutil.rmtree(run / "model")  # the analyses are read back, not recomputed
    collect_script.main([str(run), "--dest", str(dest)])


def test_an_analysis_of_both_splits_is_not_reused(collect_script, tmp_path):
    run, dest = fake_run(tmp_path / "ymodel-seed0"), tmp_path / "collected"
    (dest / "ymodel-seed0").mkdir(parents=True)
    (dest / "ymodel-seed0" / "textmix_analysis.json").write_text(json.dumps({"held_out_documents": 16}))
    shutil.rmtree(run / "model")
    with pytest.raises(SystemExit, match="no test analysis \\(found: test ∪ validation\\) and no checkpoint"):
        collect_script.main([str(run), "--dest", str(dest)])


def test_a_sweep_root_stands_for_its_run_folders_and_anything_else_is_refused(collect_script, tmp_path):
    root = tmp_path / "sweep"
    for name in ("variant=b,seed=0", "variant=a,seed=0"):
        (root / name).mkdir(parents=True)
        (root / name / "metrics.json").write_text("{}")
    (root / "variant=a,seed=0.log").write_text("")  # what a sweep writes beside each point
    (root / "unfinished").mkdir()
    run = root / "variant=b,seed=0"
    assert collect_script.run_folders([root]) == [root / "variant=a,seed=0", run]
    assert collect_script.run_folders([run]) == [run]
    for bad in (root / "unfinished", root / "variant=a,seed=0.log", tmp_path / "missing"):
        with pytest.raises(SystemExit, match="is neither a run folder"):
            collect_script.run_folders([bad])
