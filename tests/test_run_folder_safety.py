"""A run folder is never lost or misdescribed (issue 29): `--overwrite` deletes nothing until every check has passed
(items 1 and 6), `--resume` takes the saved settings as the truth (item 3), one run at a time holds a folder (item 5),
and what a killed or failed write leaves is cleaned (item 9)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_entry_points import ROOT, call, fake_run_folder, snapshot
from test_cli_safety import assert_one_line_error
from tiny_runs import TINY_ANY_TASK, TINY_RUN

from hf_icl.training import main as train_main
from hf_icl.training.arguments import parse_args
from hf_icl.training.checkpoints import RUN_MARKER
from hf_icl.utils.run_locks import LOCK_FILE, RunFolderLock

RUN = [*TINY_RUN, "--max-steps", "2"]


def old_run(folder: Path) -> Path:
    """An earlier run's folder with every output a run writes, and a file of the user's."""
    fake_run_folder(folder)
    for name in ("checkpoints/step_2/trainer_state.json", "model/model.safetensors", "summary.md"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text('{"global_step": 2}' if name.endswith(".json") else "old\n")
    (folder / "training_curves.png").write_bytes(b"\x89PNG old")
    return folder


# ---- item 1 and 6: checks that need the data or the model run before the folder is touched ------------------------


SETUP_ERRORS = [
    (["--aux-loss-weight", "bogus=1"], ["argument --aux-loss-weight", "bogus is not an auxiliary loss"]),
    (["--override", "vocab_size=2"], ["argument --override", "vocab_size=2 is not allowed", "fixes vocab_size=20"]),
    (["--override", "max_position_embeddings=8"], ["argument --override", "covers only max_position_embeddings=8"]),
    (["--task", "linear_regression", "--override", "max_position_embeddings=30", "--curriculum", "n_points=11:20:1:1",
      "--max-steps", "12"], ["argument --curriculum", "at step 12", "covers only max_position_embeddings=30"]),
    (["--task", "linear_regression", "--ngram-heads", "1:1,2"], ["argument --ngram-heads", "continuous inputs"]),
]  # fmt: skip


@pytest.mark.parametrize("argv, fragments", SETUP_ERRORS, ids=[" ".join(a[:2]) + a[-1] for a, _ in SETUP_ERRORS])
def test_overwrite_keeps_the_old_run_when_the_new_one_fails_its_setup(argv, fragments, tmp_path):
    folder = old_run(tmp_path / "run")
    before = snapshot(folder)
    outcome = call(train_main, [*TINY_ANY_TASK, "--max-steps", "2", *argv, "--output-dir", str(folder), "--overwrite"])
    assert outcome.escaped is None and outcome.status == 2, (outcome.status, outcome.err[-2000:], outcome.escaped)
    errors = [line for line in outcome.err.replace("\r", "\n").split("\n") if "error:" in line]
    assert len(errors) == 1 and all(fragment in errors[0] for fragment in fragments), outcome.err[-1500:]
    assert "Traceback" not in outcome.err
    assert snapshot(folder) == before


@pytest.mark.parametrize("argv, fragments", SETUP_ERRORS[:2], ids=["aux-loss", "vocab"])
def test_a_failed_setup_leaves_no_folder_behind(argv, fragments, tmp_path):
    """A marker-only folder blocked both a fresh run and --resume."""
    outcome = call(train_main, [*RUN, *argv, "--output-dir", str(tmp_path / "new" / "run")])
    assert outcome.status == 2 and all(fragment in outcome.err for fragment in fragments), outcome.err[-1500:]
    assert not (tmp_path / "new").exists()


def test_an_output_folder_that_cannot_be_created_is_one_line(tmp_path):
    (tmp_path / "a_file").write_text("x")
    outcome = call(train_main, [*RUN, "--output-dir", str(tmp_path / "a_file" / "run")])
    assert_one_line_error(outcome, "argument --output-dir", "cannot be created", "is a file")


# ---- item 3: the saved settings are the truth ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("resume") / "run"
    train_main([*TINY_RUN, "--max-steps", "6", "--checkpoint-every", "3", "--output-dir", str(folder)])
    return folder


def copy_of(finished_run: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    shutil.copytree(finished_run, folder)
    return folder


def test_resume_with_other_training_settings_is_refused_listing_them(finished_run, tmp_path):
    folder = copy_of(finished_run, tmp_path)
    before = snapshot(folder)
    argv = ["--output-dir", str(folder), "--resume", "--seed", "7", "--batch-size", "8", "--lr", "0.01"]
    expected = ["batch_size: saved 32, now 8", "lr: saved 0.003, now 0.01", "seed: saved 0, now 7"]
    line = assert_one_line_error(call(train_main, argv), "argument --resume", *expected, "--allow-changed-settings")
    assert "n_train" not in line and "preset" not in line  # defaults of this command line are not "changes"
    assert snapshot(folder) == before


def test_resume_without_settings_continues_with_the_saved_ones(finished_run, tmp_path):
    folder = copy_of(finished_run, tmp_path)
    metrics = train_main(["--output-dir", str(folder), "--resume"])  # not --preset tiny, not --n-train 100
    assert metrics["run_config"]["preset"] == "tiny" and metrics["run_config"]["n_train"] == 100
    assert json.loads((folder / "metrics.json").read_text())["run_config"]["max_steps"] == 6


def test_resume_with_allowed_changes_applies_and_records_both(finished_run, tmp_path):
    folder = copy_of(finished_run, tmp_path)
    argv = ["--output-dir", str(folder), "--resume", "--allow-changed-settings", "--max-steps", "8", "--lr", "0.01",
            "--log-every", "1"]  # fmt: skip
    metrics = train_main(argv)
    assert metrics["run_config"]["lr"] == 0.01 and metrics["run_config"]["max_steps"] == 8
    (change,) = metrics["setting_changes"]
    assert change["step"] == 6
    assert change["changes"]["lr"] == {"saved": 0.003, "now": 0.01}
    assert change["changes"]["max_steps"] == {"saved": 6, "now": 8}
    assert "log_every" not in change["changes"]  # bookkeeping, not a training setting
    step_7 = next(record for record in metrics["train"]["history"] if record["step"] == 7)
    # the new peak rate took effect, scaled by the rate the finished run had reached: a longer run is not re-warmed
    assert step_7["lr"] == pytest.approx(0.01 * change["lr_schedule"]["multiplier"]) and step_7["lr"] < 0.01
    assert json.loads((folder / "metrics.json").read_text())["setting_changes"] == metrics["setting_changes"]
    marker = json.loads((folder / RUN_MARKER).read_text())
    assert marker["run_config"]["lr"] == 0.01 and marker["setting_changes"] == metrics["setting_changes"]


def test_resume_never_changes_the_model_or_the_data(finished_run, tmp_path):
    folder = copy_of(finished_run, tmp_path)
    outcome = call(train_main, ["--output-dir", str(folder), "--resume", "--allow-changed-settings", "--n-train", "50"])
    assert_one_line_error(outcome, "argument --resume", "n_train: saved 100, now 50", "n_train cannot change")


@pytest.mark.parametrize("damage", ["{not json", '{"format": "hf_icl run"}', "[]"])
def test_resume_with_a_damaged_marker_is_refused(damage, finished_run, tmp_path):
    """A corrupt marker disabled the settings check: a resume with another --n-train went ahead."""
    folder = copy_of(finished_run, tmp_path)
    (folder / RUN_MARKER).write_text(damage)
    before = snapshot(folder)
    outcome = call(train_main, [*TINY_RUN, "--n-train", "50", "--output-dir", str(folder), "--resume"])
    assert_one_line_error(outcome, "argument --resume", RUN_MARKER, "--overwrite")
    assert snapshot(folder) == before


# ---- item 5: one run per folder -------------------------------------------------------------------------------------


HOLD = """
import sys, time
from pathlib import Path
from hf_icl.utils.run_locks import RunFolderLock
with RunFolderLock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(120)
"""


def test_a_second_run_into_a_held_folder_is_refused_naming_the_holder(tmp_path):
    folder = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(folder)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert holder.stdout.readline().strip() == "held"
        outcome = call(train_main, [*RUN, "--output-dir", str(folder)])
        assert_one_line_error(outcome, "argument --output-dir", "in use by another run", f"pid {holder.pid} on")
        assert sorted(p.name for p in folder.iterdir()) == [LOCK_FILE]  # nothing of ours was written
    finally:
        holder.kill()
        holder.wait()
    # The kernel released the dead holder's lock; its file (and pid) stays behind and blocks nothing.
    assert json.loads(json.dumps(train_main([*RUN, "--output-dir", str(folder)])))["train"]["steps"] == 2
    assert not (folder / LOCK_FILE).exists()


def test_two_runs_started_together_into_one_folder(tmp_path):
    """Both exited 0 and one silently replaced the other."""
    folder = tmp_path / "run"
    command = [sys.executable, str(ROOT / "train.py"), *RUN, "--output-dir", str(folder)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    runs = [subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
            for _ in range(2)]  # fmt: skip
    results = [(run.wait(timeout=600), run.stderr.read()) for run in runs]
    assert sorted(code for code, _ in results) == [0, 2], [err[-1500:] for _, err in results]
    refused = next(err for code, err in results if code == 2)
    assert "is in use by another run (pid" in refused or "already holds a run" in refused, refused[-1500:]


def test_the_lock_removes_a_folder_it_created_and_left_empty(tmp_path):
    with RunFolderLock(tmp_path / "a" / "b"):
        assert (tmp_path / "a" / "b" / LOCK_FILE).is_file()
    assert list(tmp_path.iterdir()) == []


# ---- item 9: what a killed or failed write leaves is cleaned ------------------------------------------------------


def test_a_resume_cleans_what_a_killed_run_left(finished_run, tmp_path):
    folder = copy_of(finished_run, tmp_path)
    (folder / "checkpoints" / ".tmp-step_9").mkdir()
    (folder / "checkpoints" / ".tmp-step_9" / "model.safetensors").write_bytes(b"half")
    (folder / ".tmp-summary.md").write_text("half")
    os.replace(folder / "model", folder / ".old-model")  # killed between the two renames of a model swap
    train_main(["--output-dir", str(folder), "--resume"])
    leftovers = [p for p in folder.rglob("*") if p.name.startswith((".tmp-", ".old-"))]
    assert leftovers == [] and (folder / "model" / "model.safetensors").is_file()


def test_a_full_disk_leaves_no_half_checkpoint(tmp_path, monkeypatch):
    from accelerate import Accelerator

    def full_disk(self, output_dir=None, **kwargs):
        Path(output_dir, "model.safetensors").write_bytes(b"half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Accelerator, "save_state", full_disk)
    folder = tmp_path / "run"
    outcome = call(train_main, [*RUN, "--output-dir", str(folder)])
    assert outcome.escaped is not None and "No space left on device" in outcome.escaped
    assert not [p for p in folder.rglob("*") if p.name.startswith(".tmp-")]
    assert not (folder / LOCK_FILE).exists()


def test_resume_of_a_run_stopped_before_its_first_checkpoint_says_to_overwrite(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / RUN_MARKER).write_text(json.dumps({"format": "hf_icl run", "run_config": parse_args(RUN).to_dict()}))
    outcome = call(train_main, ["--output-dir", str(folder), "--resume"])
    assert_one_line_error(outcome, "argument --resume", "before its first checkpoint", "--overwrite")
