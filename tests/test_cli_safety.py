"""Regression tests of issue #15, one per row of its table: bad input ends in status 2 and one line, and nothing a
user has is lost (`--overwrite` on a folder that is not a run, dataset exports into an existing folder, damaged
checkpoints on resume, a resume with other settings, a launch that starts fewer processes than asked for)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest
import torch
import yaml
from cli_entry_points import ROOT, call, export_command, fake_run_folder, snapshot, tiny_checkpoint
from safetensors.torch import load_file
from tiny_runs import TINY_RUN

import hf_icl.evaluate
import hf_icl.export
from hf_icl.training import main as train_main
from hf_icl.training.checkpoints import RUN_MARKER, run_outputs
from hf_icl.training.launch import requested_processes, single_process_launch_warning
from hf_icl.utils.atomic_files import write_json_atomic


def assert_one_line_error(outcome, *fragments):
    """Status 2, one line on stderr holding every fragment, no traceback."""
    assert outcome.escaped is None, outcome.escaped
    assert outcome.status == 2, (outcome.status, outcome.err[-3000:])
    lines = outcome.err.strip("\n").split("\n")
    assert len(lines) == 1, outcome.err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert "Traceback" not in outcome.err
    return lines[0]


# ---- validation before any work ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, fragments",
    [
        (["--max-steps", "-5"], ["argument --max-steps", "max_steps=-5", "expected an integer >= 1"]),
        (["--lr", "0"], ["argument --lr", "lr=0.0", "> 0"]),
        (["--lr", "-1"], ["argument --lr", "lr=-1.0", "> 0"]),
        (["--threads", "-1"], ["argument --threads", "threads=-1", "expected an integer in [1, 1024]"]),
        (["--task-option", "n_test=abc"], ["argument --task-option", "n_test='abc'", "expected an integer"]),
        (["--task-option", "n_test=-5"], ["argument --task-option", "n_test=-5", ">= 0"]),
        (["--task-option", "n_test=0"], ["argument --task-option", "n_test=0", "a split cannot be empty"]),
        (["--task-option", "foo"], ["argument --task-option", "'foo' must look like FIELD=VALUE"]),
        (["--task-option", "n_states=3"], ["argument --task-option", "'n_states' is not one of"]),
        (["--n-train", "0"], ["argument --n-train", "n_train=0"]),
        (["--seed", "-1"], ["argument --seed", "seed=-1"]),
        (["--epochs", "nan"], ["argument --epochs", "epochs=nan"]),
        (["--override", "hidden_size=abc"], ["argument --override", "hidden_size='abc'", "expected an integer"]),
        (["--push-to-hub", "a/b/c"], ["argument --push-to-hub", "a/b/c"]),
    ],
)
def test_train_bad_values_exit_2_before_any_work(argv, fragments, tmp_path):
    line = assert_one_line_error(call(train_main, [*argv, "--output-dir", str(tmp_path / "never")]), *fragments)
    assert "--override" not in line or "--override" in argv  # the flag the user gave, not another
    assert not (tmp_path / "never").exists()


@pytest.mark.parametrize(
    "argv, fragments",
    [
        (["--task", "linear_regression", "--task-option", "n_dims=4", "--task-option", "n_test=8",
          "--curriculum", "n_dims=2:6:1:10"],
         ["argument --curriculum", "n_dims=2:6:1:10 reaches {'n_dims': 6} at its end", "input_dim=4"]),
        (["--task", "regbench", "--n-train", "8", "--aux-loss-weight", "load_balance=0.5"],
         ["argument --aux-loss-weight", "load_balance is not an auxiliary loss of this model", "reports: none"]),
    ],
)  # fmt: skip
def test_bad_values_known_only_to_the_data_or_model_exit_2_before_the_first_step(argv, fragments, tmp_path):
    run = [*argv, "--preset", "tiny", "--max-steps", "5", "--threads", "1", "--report-to", "none"]
    outcome = call(train_main, [*run, "--output-dir", str(tmp_path / "run")])
    assert outcome.escaped is None and outcome.status == 2, (outcome.status, outcome.err[-3000:])
    assert "Traceback" not in outcome.err  # the data was prepared first (its progress bars), then one error line
    lines = [line for line in re.split(r"[\r\n]", outcome.err) if "error: argument" in line]
    assert len(lines) == 1 and all(fragment in lines[0] for fragment in fragments), outcome.err[-1000:]
    assert not (tmp_path / "run" / "checkpoints").exists() and not (tmp_path / "run" / "model").exists()


def test_config_file_errors_name_the_file(tmp_path):
    bad_yaml, bad_value = tmp_path / "bad.yaml", tmp_path / "lr.yaml"
    bad_yaml.write_text("lr: [1, 2\n")
    bad_value.write_text(yaml.safe_dump({"lr": 0.0}))
    for path, fragment in ((bad_yaml, "is not valid YAML"), (bad_value, "lr=0.0 is not allowed")):
        outcome = call(train_main, ["--config", str(path), "--output-dir", str(tmp_path / "never")])
        assert_one_line_error(outcome, "argument --config", fragment)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return tiny_checkpoint(tmp_path_factory.mktemp("checkpoint") / "model")


@pytest.mark.parametrize(
    "argv, fragments",
    [
        (["--task-option", "foo"], ["argument --task-option", "'foo' must look like FIELD=VALUE"]),
        (["--task-option", "bogus=3"], ["argument --task-option", "'bogus' is not one of"]),
        (["--batch-size", "0"], ["argument --batch-size", "batch_size=0", ">= 1"]),
        (["--max-rows", "-1"], ["argument --max-rows", "max_rows=-1", ">= 1"]),
    ],
)
def test_evaluate_bad_values_exit_2_before_loading(argv, fragments, checkpoint, tmp_path):
    argv = ["--checkpoint", str(checkpoint), "--task", "regbench", "--output-dir", str(tmp_path / "eval"), *argv]
    assert_one_line_error(call(hf_icl.evaluate.main, argv), *fragments)
    assert not (tmp_path / "eval").exists()


@pytest.mark.parametrize(
    "script, argv, fragments",
    [
        ("regbench", ["--n-train", "0"], ["argument --n-train", "n_train=0", "a split cannot be empty"]),
        ("regbench", ["--n-train", "-5"], ["argument --n-train", "n_train=-5", ">= 0"]),
        ("formal_languages", ["--n-per-length", "0"], ["argument --n-per-length", "n_per_length=0"]),
        ("copying", ["--n-per-length", "0"], ["argument --n-per-length", "n_per_length=0"]),
        ("copying", ["--n-train", "-5"], ["argument --n-train", "n_train=-5"]),
        ("icl_arithmetic", ["--n-test", "0"], ["argument --n-test", "n_test=0", "a split cannot be empty"]),
        ("text_mixture", ["--n-validation", "0"], ["argument --n-validation", "n_validation=0", "cannot be empty"]),
    ],
)
def test_export_bad_values_exit_2_before_any_work(script, argv, fragments, tmp_path):
    cache = tmp_path / "cache"
    outcome = call(export_command(script).main, ["--output", str(tmp_path / "out"), "--cache-dir", str(cache), *argv])
    assert_one_line_error(outcome, *fragments)
    assert not (tmp_path / "out").exists() and not cache.exists()


@pytest.mark.parametrize(
    "argv, fragments",
    [
        (["chess", "--output", "out"], ["argument EXPORT", "'chess' is not one of", "copying", "regbench", "tomita_6"]),
        (["--output", "out", "regbench"], ["argument EXPORT", "expected an export, task family or task first"]),
        (["regbench", "--configs", "n7"], ["argument --configs", "invalid choice: 'n7'", "n150"]),
        (["parity_p", "--output", "out", "--n-per-length", "x"], ["argument --n-per-length", "invalid int value"]),
    ],
)
def test_export_target_and_options_exit_2_before_any_work(argv, fragments, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    outcome = call(hf_icl.export.main, argv)
    assert_one_line_error(outcome, *fragments)
    assert not list(tmp_path.iterdir())


# ---- --overwrite deletes only what a run wrote --------------------------------------------------------------------


@pytest.mark.parametrize("overwrite", [True, False])
def test_folder_that_is_not_a_run_is_refused_without_suggesting_overwrite(overwrite, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "notes.txt").write_text("a week of notes\n")
    before = snapshot(folder)
    outcome = call(train_main, [*TINY_RUN, "--output-dir", str(folder), *(["--overwrite"] if overwrite else [])])
    line = assert_one_line_error(outcome, "argument --output-dir", "holds no hf_icl run", "choose a new or empty")
    assert "pass --overwrite" not in line and "--overwrite to" not in line
    assert snapshot(folder) == before


def test_overwrite_replaces_the_run_and_keeps_the_users_files(tmp_path, capsys):
    folder = fake_run_folder(tmp_path / "run")
    (folder / "checkpoints" / "step_7").mkdir(parents=True)  # an old run's outputs go
    metrics = train_main([*TINY_RUN, "--max-steps", "2", "--output-dir", str(folder), "--overwrite"])
    assert (folder / "notes.txt").read_text() == "my notes\n"
    assert not (folder / "checkpoints" / "step_7").exists()
    assert json.loads((folder / "metrics.json").read_text())["train"]["steps"] == 2 == metrics["train"]["steps"]
    assert json.loads((folder / RUN_MARKER).read_text())["run_config"]["max_steps"] == 2
    assert {p.name for p in folder.iterdir()} - {"notes.txt"} <= run_outputs()  # every output is declared
    out = capsys.readouterr().out
    assert "kept 1 entries that are not run outputs: notes.txt" in out
    assert "| model |" in out and "| 3-gram (paper) |" in out  # the headline metrics reach the terminal


def test_existing_run_is_refused_with_the_way_forward(tmp_path):
    folder = fake_run_folder(tmp_path / "run")
    before = snapshot(folder)
    assert_one_line_error(call(train_main, [*TINY_RUN, "--output-dir", str(folder)]), "already holds a run")
    assert snapshot(folder) == before


# ---- resume: damaged checkpoints fall back, other settings are refused --------------------------------------------


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A 6-step run with checkpoints at steps 3 and 6, and its final weights."""
    folder = tmp_path_factory.mktemp("resume") / "run"
    train_main([*TINY_RUN, "--max-steps", "6", "--checkpoint-every", "3", "--output-dir", str(folder)])
    return folder, load_file(folder / "model" / "model.safetensors")


def damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2] if how == "truncate" else b"\x00garbage{")


@pytest.mark.parametrize(
    "file, how, said",
    [
        ("model.safetensors", "truncate", "skipping checkpoint"),  # found before any work
        ("trainer_state.json", "garbage", "skipping checkpoint"),
        ("optimizer.bin", "garbage", "does not load"),  # found only when loading: the fallback happens there
    ],
)
def test_resume_falls_back_to_the_previous_checkpoint(finished_run, file, how, said, tmp_path, capsys):
    source, final_weights = finished_run
    folder = tmp_path / "run"
    shutil.copytree(source, folder)
    damage(folder / "checkpoints" / "step_6" / file, how)
    train_main([*TINY_RUN, "--max-steps", "6", "--checkpoint-every", "3", "--output-dir", str(folder), "--resume"])
    captured = capsys.readouterr()
    assert said in captured.err + captured.out
    assert "resumed from" in captured.out and "step_3 at step 3" in captured.out
    weights = load_file(folder / "model" / "model.safetensors")
    assert all(torch.equal(weights[k], final_weights[k]) for k in final_weights)  # steps 4-6 redone exactly


def test_resume_without_a_loadable_checkpoint_is_a_clear_error(finished_run, tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(finished_run[0], folder)
    for step in ("step_3", "step_6"):
        damage(folder / "checkpoints" / step / "model.safetensors", "truncate")
    before = snapshot(folder)
    outcome = call(train_main, [*TINY_RUN, "--max-steps", "6", "--output-dir", str(folder), "--resume"])
    assert_one_line_error(outcome, "argument --resume", "no loadable completed checkpoint", "model.safetensors")
    assert snapshot(folder) == before


@pytest.mark.parametrize(
    "argv, fragments",
    [
        (["--architecture", "mamba"], ["argument --resume", "architecture: saved 'transformer', now 'mamba'"]),
        (["--preset", "small", "--n-train", "50"], ["preset: saved 'tiny', now 'small'", "n_train: saved 100"]),
        (["--max-steps", "2"], ["argument --resume", "max_steps: saved 6, now 2", "--allow-changed-settings"]),
        (["--max-steps", "2", "--allow-changed-settings"], ["argument --max-steps", "below step 6"]),
    ],
)
def test_resume_with_other_settings_is_refused(finished_run, argv, fragments, tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(finished_run[0], folder)
    before = snapshot(folder)
    base = [*TINY_RUN, "--max-steps", "6", "--output-dir", str(folder), "--resume"]
    assert_one_line_error(call(train_main, [*base, *argv]), *fragments)
    assert snapshot(folder) == before


# ---- dataset exports merge into an existing folder ----------------------------------------------------------------


def card(folder: Path) -> tuple[dict, str]:
    _, front, body = (folder / "README.md").read_text().split("---\n", 2)
    return yaml.safe_load(front), body


def test_export_into_an_existing_folder_merges_and_lists_every_config(tmp_path):
    script = export_command("regbench")
    folder, cache = tmp_path / "regbench", str(tmp_path / "cache")
    sizes = ["--n-train", "4", "--n-test", "3", "--n-validation", "2"]
    script.main(["--output", str(folder), "--cache-dir", cache, "--configs", *script.CONFIGS[1:], *sizes])
    before = snapshot(folder)

    # A config that is already there is not regenerated without --replace-configs (the command).
    outcome = call(script.main, ["--output", str(folder), "--cache-dir", cache, "--configs", "n500", *sizes])
    assert_one_line_error(outcome, "argument --configs", "n500 already exist", "--replace-configs")
    assert snapshot(folder) == before

    # A new config merges: the card lists all nine, and every one loads.
    other_sizes = ["--n-train", "5", "--n-test", "2", "--n-validation", "2"]
    script.main(["--output", str(folder), "--cache-dir", cache, "--configs", "n150", *other_sizes])
    front, body = card(folder)
    assert [c["config_name"] for c in front["configs"]] == script.CONFIGS
    assert front["hf_icl_export"]["n150"] == {"n_train": 5, "n_test": 2, "n_validation": 2}
    assert front["hf_icl_export"]["n2500"] == {"n_train": 4, "n_test": 3, "n_validation": 2}
    assert "| n150 | 5 | 2 | 2 |" in body and "| n2500 | 4 | 2 | 3 |" in body  # each config's own settings
    assert datasets.load_dataset(str(folder), "n2500", split="test", cache_dir=cache).num_rows == 3
    assert datasets.load_dataset(str(folder), "n150", split="train", cache_dir=cache).num_rows == 5
    for config in script.CONFIGS[1:]:
        for split in ("train", "test"):
            name = f"{config}/{split}-00000-of-00001.parquet"
            assert (folder / name).read_bytes() == before[name]  # the other configs untouched

    # --replace-configs regenerates only the named config.
    script.main(["--output", str(folder), "--cache-dir", cache, "--configs", "n150", "--replace-configs", *sizes])
    assert pq.read_metadata(folder / "n150" / "train-00000-of-00001.parquet").num_rows == 4
    assert [c["config_name"] for c in card(folder)[0]["configs"]] == script.CONFIGS


def test_export_repairs_a_card_that_lists_too_few_configs(tmp_path):
    """The state the old exporter left: eight configs on disk, a card that lists only the last one exported."""
    script = export_command("regbench")
    folder, cache = tmp_path / "regbench", str(tmp_path / "cache")
    sizes = ["--n-train", "4", "--n-test", "3", "--n-validation", "2"]
    script.main(["--output", str(folder), "--cache-dir", cache, "--configs", *script.CONFIGS[:-1], *sizes])
    front, body = card(folder)
    del front["hf_icl_export"]
    front["configs"] = [c for c in front["configs"] if c["config_name"] == "n150"]
    (folder / "README.md").write_text("---\n" + yaml.safe_dump(front, sort_keys=False) + "---\n" + body)
    with pytest.raises(ValueError, match="BuilderConfig 'n2500' not found"):
        datasets.load_dataset(str(folder), "n2500", cache_dir=cache)
    script.main(["--output", str(folder), "--cache-dir", cache, "--configs", "paper_ranges", *sizes])
    front, body = card(folder)
    assert [c["config_name"] for c in front["configs"]] == script.CONFIGS
    assert front["hf_icl_export"]["n2500"] == {"n_train": 4, "n_test": 3, "n_validation": 2}  # from the old note
    assert datasets.load_dataset(str(folder), "n2500", split="test", cache_dir=cache).num_rows == 3


def test_export_refuses_a_folder_that_is_not_an_export(tmp_path):
    folder = tmp_path / "thesis"
    folder.mkdir()
    (folder / "README.md").write_text("# my thesis\n")
    before = snapshot(folder)
    outcome = call(export_command("regbench").main, ["--output", str(folder), "--configs", "n150"])
    assert_one_line_error(outcome, "argument --output", "holds no dataset export")
    assert snapshot(folder) == before


# ---- writes are atomic --------------------------------------------------------------------------------------------


def test_a_failed_write_leaves_the_previous_file(tmp_path, monkeypatch):
    path = tmp_path / "metrics.json"
    write_json_atomic(path, {"accuracy": 0.5})

    def crash(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(OSError, match="disk full"):
        write_json_atomic(path, {"accuracy": 0.9})
    assert json.loads(path.read_text()) == {"accuracy": 0.5}
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]


# ---- launch sanity ------------------------------------------------------------------------------------------------


def test_single_process_launch_warning_says_how_to_get_ddp_on_cpu():
    env = {"ACCELERATE_DYNAMO_BACKEND": "NO", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}
    launcher = ["accelerate", "launch", "--num_processes", "2", "--cpu", "train.py"]
    warning = single_process_launch_warning(1, env, launcher)
    assert "asked for 2 processes but started 1" in warning and "--multi_gpu --num_processes 2" in warning
    assert single_process_launch_warning(2, {**env, "WORLD_SIZE": "2"}, launcher) is None  # real DDP
    assert single_process_launch_warning(1, {"ACCELERATE_DYNAMO_BACKEND": "NO"}, ["accelerate", "launch"]) is None
    assert single_process_launch_warning(1, {}, launcher) is None  # plain `python train.py`
    assert requested_processes(["accelerate", "launch", "--num_processes=3", "train.py"]) == 3


def run_launched(launch_args, train_args, tmp_path):
    command = ["accelerate", "launch", *launch_args, str(ROOT / "train.py"), *train_args]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(command, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)


def test_accelerate_launch_of_two_cpu_processes_without_multi_gpu_warns(tmp_path):
    result = run_launched(
        ["--num_processes", "2", "--cpu", "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"],
        [*TINY_RUN, "--max-steps", "1", "--output-dir", str(tmp_path / "run")],
        tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "asked for 2 processes but started 1" in result.stdout + result.stderr
    assert "ACCELERATE_USE_CPU=true accelerate launch --multi_gpu --num_processes 2" in result.stdout + result.stderr


def test_clean_error_under_accelerate_launch_quiet_has_no_traceback(tmp_path):
    flags = [
        "--quiet",
        "--cpu",
        "--num_processes",
        "1",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
    ]
    result = run_launched(flags, ["--lr", "0", "--output-dir", str(tmp_path / "run")], tmp_path)
    assert result.returncode == 1  # accelerate's own status for any failed child
    errors = [line for line in result.stderr.splitlines() if "error" in line.lower()]
    assert errors == ["train.py: error: argument --lr: lr=0.0 is not allowed: expected a finite number > 0"]
    assert "Traceback" not in result.stderr and not (tmp_path / "run").exists()
