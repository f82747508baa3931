"""Nothing silent (issue 53): an exact resume under dropout, random-generator states checked like weights, strict
config files, exclusive temporary files, a plug-in import that leaves `sys.path` alone, and a Python API that names
the argument it refuses."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from cli_entry_points import call, snapshot
from safetensors.torch import load_file
from test_cli_safety import assert_one_line_error
from tiny_runs import SHORT_PROMPT_OPTIONS, TINY_RUN

from hf_icl.training import main as train_main

# ---- item 1: exact resume; the random-generator states are checked like the weights ------------------------------


def test_the_training_loader_draws_nothing_from_the_global_generator():
    """Its iterator's base seed came from the global torch generator, so a resume, which opens the iterator
    mid-epoch, shifted every later dropout mask (the kill-and-resume test in test_training.py runs with dropout)."""
    from accelerate import Accelerator

    from hf_icl.tasks import TaskData
    from hf_icl.training.data import EpochBatches

    data = TaskData(train=list(range(10)), collate=torch.tensor, model_fields={})
    stream = EpochBatches(Accelerator(cpu=True), data, batch_size=4, seed=0, grouped=False)
    before = torch.get_rng_state()
    first = [batch.tolist() for _, batch in zip(range(5), stream.iter_from(0))]
    resumed = [batch.tolist() for _, batch in zip(range(3), stream.iter_from(2))]
    assert torch.equal(torch.get_rng_state(), before)
    assert resumed == first[2:]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A 6-step run with checkpoints at steps 3 and 6, and its final weights."""
    folder = tmp_path_factory.mktemp("resume") / "run"
    train_main([*TINY_RUN, "--max-steps", "6", "--checkpoint-every", "3", "--output-dir", str(folder)])
    return folder, load_file(folder / "model" / "model.safetensors")


def damage_random_states(path: Path, how: str) -> None:
    if how == "missing":
        path.unlink()
    elif how == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif how == "garbage":
        path.write_bytes(b"\x00garbage{")
    else:  # a readable file without the generators' states
        torch.save({"step": 6}, path)


RANDOM_STATE_DAMAGE = [("missing", "is missing"), ("truncated", "is unreadable"), ("garbage", "is unreadable"),
                       ("incomplete", "lacks the states of random_state")]  # fmt: skip


@pytest.mark.parametrize("how, said", RANDOM_STATE_DAMAGE)
def test_resume_skips_a_checkpoint_whose_random_states_are_damaged(finished_run, how, said, tmp_path, capsys):
    """Accelerate logged "Could not load random states" at info level and resumed on other random numbers."""
    source, final_weights = finished_run
    folder = tmp_path / "run"
    shutil.copytree(source, folder)
    damage_random_states(folder / "checkpoints" / "step_6" / "random_states_0.pkl", how)
    train_main([*TINY_RUN, "--max-steps", "6", "--checkpoint-every", "3", "--output-dir", str(folder), "--resume"])
    captured = capsys.readouterr()
    assert "skipping checkpoint" in captured.err and f"random_states_0.pkl {said}" in captured.err
    assert "step_3 at step 3" in captured.out
    weights = load_file(folder / "model" / "model.safetensors")
    assert all(torch.equal(weights[k], final_weights[k]) for k in final_weights)  # steps 4-6 redone exactly


def test_resume_without_usable_random_states_is_refused_in_one_line(finished_run, tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(finished_run[0], folder)
    for step in ("step_3", "step_6"):
        damage_random_states(folder / "checkpoints" / step / "random_states_0.pkl", "garbage")
    before = snapshot(folder)
    outcome = call(train_main, [*TINY_RUN, "--max-steps", "6", "--output-dir", str(folder), "--resume"])
    assert_one_line_error(outcome, "argument --resume", "no loadable completed checkpoint", "random_states_0.pkl")
    assert snapshot(folder) == before


def test_loading_refuses_a_checkpoint_without_this_processs_random_states(finished_run, tmp_path, capsys):
    """A checkpoint saved by fewer processes than now load it: the missing rank's file is found while loading, before
    anything is loaded into the model."""
    from accelerate import Accelerator

    from hf_icl.training.checkpoints import ResumeError, load_checkpoint

    folder = tmp_path / "run"
    shutil.copytree(finished_run[0], folder)
    newest = folder / "checkpoints" / "step_6"
    (newest / "random_states_0.pkl").rename(newest / "random_states_1.pkl")
    accelerator = Accelerator(cpu=True)
    model = accelerator.prepare(torch.nn.Linear(2, 2))
    weights = model.weight.detach().clone()
    with pytest.raises(ResumeError, match="no checkpoint under .* loads"):
        load_checkpoint(accelerator, [newest])
    assert "random_states_0.pkl is missing" in capsys.readouterr().out
    assert torch.equal(model.weight, weights)


# ---- item 4: strict config files -----------------------------------------------------------------------------------

BOMB = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n' + "".join(
    f"{n}: &{n} [{','.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdef", "bcdefg")
)  # 7 levels of 9 aliases: 9^7 strings from under 300 bytes

STRICT_CONFIGS = [
    ("max_steps: 2\nmax_steps: 4000\n", ["key 'max_steps' is given twice, at lines 1 and 2"]),
    ("task_options:\n  n_test: 8\n  n_test: 9\n", ["key 'task_options.n_test' is given twice, at lines 2 and 3"]),
    ("lr: .e3\n", ["key 'lr'", "'.e3' at line 1 is not a number"]),
    ("warmup_steps: 2\nlr: 1e\n", ["key 'lr'", "'1e' at line 2 is not a number"]),
    (BOMB + "overrides: {x: *g}\n", ["key 'e' at line 5", "aliases expand to more than 10,000 values"]),
    ("overrides: &o {x: *o}\n", ["an alias at line 1 refers to the value it is inside"]),
    (BOMB + "imports: *g\n", ["aliases expand to more than 10,000 values"]),  # read for plug-ins before parsing
]  # fmt: skip


STRICT_IDS = ["dup", "dup-nested", ".e3", "1e", "bomb", "loop", "imports"]


@pytest.mark.parametrize("text, fragments", STRICT_CONFIGS, ids=STRICT_IDS)
def test_a_config_file_is_strict_naming_file_key_and_line(text, fragments, tmp_path):
    """Duplicate keys were accepted (the last won: 4,000 steps), a 300-byte alias bomb gave an 8 MB error or a
    MemoryError, and `.e3` "could not convert string to float" naming neither file nor key."""
    path = tmp_path / "run.yaml"
    path.write_text(text)
    outcome = call(train_main, ["--config", str(path), "--output-dir", str(tmp_path / "never")])
    line = assert_one_line_error(outcome, "argument --config", str(path), *fragments)
    assert len(line) < 500 and not (tmp_path / "never").exists()


def test_a_sweep_spec_is_strict_naming_file_key_and_line(tmp_path):
    from hf_icl.sweep import load_spec

    path = tmp_path / "spec.yaml"
    path.write_text("output_root: out\ngrid:\n  seed: [0, 1]\n  seed: [2]\n")
    with pytest.raises(ValueError, match=r"spec\.yaml.*key 'grid\.seed' is given twice, at lines 3 and 4"):
        load_spec(path)
    path.write_text("output_root: out\ngrid:\n  lr: [1e-3, .e3]\n")
    with pytest.raises(ValueError, match=r"spec\.yaml.*key 'grid\.lr\[1\]': '\.e3' at line 3 is not a number"):
        load_spec(path)


def test_strict_yaml_keeps_what_yaml_allows():
    from hf_icl.utils.strict_yaml import read_yaml

    text = "lr: 1e-5\nb: .5e3\nc: 1_000e2\nd: e5\ne: '.e3'\nbase: &b {x: 1, y: 2}\nchild: {<<: *b, x: 3}\nz: *b\n"
    assert read_yaml(text) == {
        "lr": 1e-5, "b": 500.0, "c": 100000.0, "d": "e5", "e": ".e3", "base": {"x": 1, "y": 2},
        "child": {"x": 3, "y": 2}, "z": {"x": 1, "y": 2},
    }  # fmt: skip


# ---- item 5: exclusive temporary files; plug-in imports leave sys.path alone -------------------------------------


def test_a_planted_temporary_symlink_is_never_followed(tmp_path):
    """The writer opened the predictable `.tmp-REPORT.md` with "w": a symlink planted there made it overwrite a
    file outside the output folder."""
    from hf_icl.utils.atomic_files import atomic_path, write_folder_atomic, write_text_atomic

    out, victim = tmp_path / "out", tmp_path / "victim.txt"
    out.mkdir()
    victim.write_text("keep me\n")
    for name in ("REPORT.md", "curve.png"):
        (out / f".tmp-{name}").symlink_to(victim)
    write_text_atomic(out / "REPORT.md", "# report\n")
    with atomic_path(out / "curve.png") as tmp:
        assert tmp.name.startswith(".tmp-") and tmp.name.endswith("-curve.png") and not tmp.is_symlink()
        tmp.write_bytes(b"png")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / ".tmp-model").symlink_to(elsewhere, target_is_directory=True)
    write_folder_atomic(out / "model", lambda folder: (folder / "weights").write_text("w"))
    assert victim.read_text() == "keep me\n" and list(elsewhere.iterdir()) == []
    assert (out / "REPORT.md").read_text() == "# report\n" and (out / "curve.png").read_bytes() == b"png"
    assert (out / "model" / "weights").read_text() == "w" and not (out / "model").is_symlink()


def test_temporaries_are_created_exclusively_under_fresh_names(tmp_path, monkeypatch):
    """Even a symlink planted under the random name drawn first is not followed: another name is drawn."""
    import secrets

    from hf_icl.utils import atomic_files

    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    names = iter(["aaaaaaaa", "bbbbbbbb"])
    monkeypatch.setattr(secrets, "token_hex", lambda n: next(names))
    (tmp_path / ".tmp-aaaaaaaa-metrics.json").symlink_to(victim)
    atomic_files.write_json_atomic(tmp_path / "metrics.json", {"a": 1})
    assert victim.read_text() == "keep me\n" and (tmp_path / "metrics.json").read_text() == '{\n  "a": 1\n}'
    assert not (tmp_path / ".tmp-bbbbbbbb-metrics.json").exists()  # renamed into place
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "metrics.json").stat().st_mode & 0o777 == 0o666 & ~umask  # as open(..., "w") made it


def test_a_planted_old_folder_symlink_is_removed_not_restored(tmp_path):
    from hf_icl.utils.atomic_files import clean_leftovers

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / ".old-model").symlink_to(elsewhere, target_is_directory=True)
    assert clean_leftovers(out) == [".old-model"]
    assert list(out.iterdir()) == [] and elsewhere.is_dir()


@pytest.fixture
def clean_sys_path(tmp_path, monkeypatch):
    """Run in an empty current folder that is not on `sys.path`; restore `sys.path` and the plug-in cache after."""
    from hf_icl import plugins

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    monkeypatch.setattr(plugins, "_loaded", {})
    yield tmp_path
    for name in ("nothing_silent_plugin", "nothing_silent_shadow"):
        sys.modules.pop(name, None)


def test_an_import_by_name_leaves_the_current_folder_off_sys_path(clean_sys_path):
    """`--import NAME` appended the current folder to `sys.path` for the whole process, so a later optional
    `import xgboost` ran `./xgboost.py`."""
    from hf_icl.plugins import import_plugin

    (clean_sys_path / "nothing_silent_shadow.py").write_text("raise RuntimeError('shadowing module ran')\n")
    assert import_plugin("json") == "json"
    assert str(clean_sys_path) not in sys.path and "" not in sys.path
    with pytest.raises(ModuleNotFoundError):
        __import__("nothing_silent_shadow")


def test_a_module_of_the_current_folder_is_imported_only_when_named_as_a_path(clean_sys_path):
    from hf_icl.plugins import import_plugin

    (clean_sys_path / "nothing_silent_plugin.py").write_text("LOADED = True\n")
    with pytest.raises(ValueError, match=r"no module 'nothing_silent_plugin' on the import path.*--import "
                       r"\./nothing_silent_plugin\.py"):  # fmt: skip
        import_plugin("nothing_silent_plugin")
    assert import_plugin("./nothing_silent_plugin.py") == "nothing_silent_plugin"
    assert sys.modules["nothing_silent_plugin"].LOADED and str(clean_sys_path) not in sys.path


MARKER_PLUGIN = "import os, pathlib\npathlib.Path(os.environ['HF_ICL_TEST_MARKERS'], __name__ + '.ran').touch()\n"
"""A plug-in whose only effect is a file `<its module name>.ran` in `$HF_ICL_TEST_MARKERS`: proof that its code ran."""


@pytest.fixture
def marker_plugins(clean_sys_path, monkeypatch):
    """Three marker plug-ins in the current folder (`marker_cli.py`, `marker_config.py`, `marker_env.py`), a
    `run.yaml` whose `imports:` names one, and a fresh plug-in state (nothing deferred, nothing loaded)."""
    from hf_icl import plugins

    monkeypatch.setenv("HF_ICL_TEST_MARKERS", str(clean_sys_path))
    for name in ("marker_cli", "marker_config", "marker_env"):
        (clean_sys_path / f"{name}.py").write_text(MARKER_PLUGIN)
    (clean_sys_path / "run.yaml").write_text("imports: [./marker_config.py]\nmax_steps: 2\n")
    monkeypatch.setattr(plugins, "_pending", [], raising=False)
    monkeypatch.setattr(plugins, "_installed_pending", False, raising=False)
    yield clean_sys_path
    for name in ("marker_cli", "marker_config", "marker_env"):
        sys.modules.pop(name, None)


def ran(folder: Path) -> list[str]:
    return sorted(p.stem for p in folder.glob("*.ran"))


def test_help_and_dry_run_run_no_plugin_code_they_do_not_need(marker_plugins, monkeypatch):
    """`train.py --config X --help` ran the code of X's `imports:`, and `sweep --dry-run` that of its spec's."""
    import hf_icl.evaluate
    from hf_icl import plugins
    from hf_icl.sweep import main as sweep_main

    folder = marker_plugins
    named = ["--import", "./marker_cli.py"]
    for entry, argv in [(train_main, [*named, "--config", "run.yaml", "--help"]),
                        (train_main, [*named, "--config", "run.yaml", "--task", "regbench", "--help"]),
                        (hf_icl.evaluate.main, [*named, "--help"])]:  # fmt: skip
        outcome = call(entry, argv)
        assert outcome.status == 0 and "usage:" in outcome.out, (argv, outcome.err[-1000:], outcome.escaped)
    (folder / "spec.yaml").write_text(
        "output_root: sweep\nconfig: run.yaml\nbase: {task: regbench, architecture: transformer, preset: tiny}\n"
        "grid: {seed: [0, 1]}\n"
    )
    outcome = call(sweep_main, ["spec.yaml", *named, "--dry-run"])
    assert outcome.status == 0 and "2 points" in outcome.out, (outcome.err[-1000:], outcome.escaped)
    monkeypatch.setenv("HF_ICL_PLUGINS", "./marker_env.py")
    assert plugins.load_installed_plugins(defer=True) == []  # what `import hf_icl` does in a describing process
    assert ran(folder) == [] and not (folder / "sweep").exists()
    # needed: `--task T --help` of a task no loaded code has; which plug-in registers it is known only by importing
    outcome = call(train_main, [*named, "--config", "run.yaml", "--task", "plugin_task", "--help"])
    assert ran(folder) == ["marker_cli", "marker_config", "marker_env"]
    assert_one_line_error(outcome, "argument --task", "'plugin_task'")  # none of them registers it


def test_a_dry_run_imports_the_plugins_when_a_point_needs_them(marker_plugins):
    """A point that does not parse without the plug-ins (here: a task none of them has) imports them, then fails as
    before; with the built-in tasks above, nothing was imported."""
    from hf_icl.sweep import main as sweep_main

    (marker_plugins / "spec.yaml").write_text(
        "output_root: sweep\nconfig: run.yaml\nbase: {task: plugin_task}\ngrid: {seed: [0]}\n"
    )
    outcome = call(sweep_main, ["spec.yaml", "--import", "./marker_cli.py", "--dry-run"])
    assert ran(marker_plugins) == ["marker_cli", "marker_config"], outcome
    assert_one_line_error(outcome, "point seed=0", "plugin_task")


@pytest.mark.parametrize("argv, describes", [
    (["python", str(Path(__file__).parents[1] / "train.py"), "--config", "x.yaml", "--help"], True),
    (["python", "-m", "hf_icl.sweep", "spec.yaml", "--dry-run"], True),
    (["python", "-P", "-X", "dev", "-m", "hf_icl.evaluate", "-h"], True),
    (["python", "-mhf_icl.export", "regbench", "--help"], True),
    (["python", "/venv/bin/hf-icl", "sweep", "spec.yaml", "--dry-run"], True),
    (["python", "-m", "hf_icl.train", "--max-steps", "2"], False),
    (["python", "-m", "hf_icl.evaluate", "--dry-run"], False),  # only the sweep has a dry run
    (["python", "/home/me/train.py", "--help"], False),  # a script of one's own sees every plug-in
    (["python", "-m", "pytest", "--help"], False),
    (["python", "-c", "import hf_icl", "--help"], False),
])  # fmt: skip
def test_import_hf_icl_defers_installed_plugins_only_for_a_describing_command(argv, describes):
    from hf_icl.plugins import process_describes_only

    assert process_describes_only(argv) is describes


@pytest.mark.slow
def test_help_in_a_fresh_process_runs_no_plugin_of_any_kind_unless_it_names_one_of_theirs(tmp_path):
    """For real: entry point, `HF_ICL_PLUGINS`, `--import` and a config's `imports:`, each a marker plug-in (~50 s)."""
    import subprocess

    from cli_entry_points import ROOT

    for name in ("marker_cli", "marker_config", "marker_env", "marker_entry_point"):
        (tmp_path / f"{name}.py").write_text(MARKER_PLUGIN)
    shutil.copytree(ROOT / "tests" / "plugin_example" / "hf_icl_toy_plugin", tmp_path / "hf_icl_toy_plugin")
    dist = tmp_path / "site" / "marker_entry_point-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: marker-entry-point\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[hf_icl.plugins]\nmarker = marker_entry_point\n")
    (tmp_path / "run.yaml").write_text("imports: [./marker_config.py]\nmax_steps: 2\n")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_ICL_TEST_MARKERS": str(tmp_path), "HF_ICL_PLUGINS":
           "./marker_env.py", "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(tmp_path), str(ROOT)])}

    def run(*argv):
        result = subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=env, cwd=tmp_path,
                                timeout=600, stdin=subprocess.DEVNULL)  # fmt: skip
        assert result.returncode == 0, result.stderr[-2000:]
        return result.stdout

    assert "usage: train.py" in run(str(ROOT / "train.py"), "--import", "./marker_cli.py", "--config", "run.yaml",
                                    "--help")  # fmt: skip
    assert ran(tmp_path) == []
    out = run(str(ROOT / "train.py"), "--import", "./hf_icl_toy_plugin", "--task", "toy_lagged_sum", "--help")
    assert "task 'toy_lagged_sum' (family 'toy_plugin_regression'" in out  # its options, described by the plug-in
    assert ran(tmp_path) == ["marker_entry_point", "marker_env"]
    (tmp_path / "spec.yaml").write_text("output_root: sweep\nbase: {task: toy_lagged_sum, architecture: toy_ema, "
                                        "preset: tiny, max_steps: 2}\ngrid: {seed: [0]}\n")  # fmt: skip
    assert "seed=0  [new]" in run("-m", "hf_icl.sweep", "spec.yaml", "--import", "./hf_icl_toy_plugin", "--dry-run")


# ---- item 7: the Python API names the argument it refuses ----------------------------------------------------------


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"dropout": 2.0}, r"dropout=2\.0 is not allowed: expected a finite number in \[0, 1\)"),
        ({"dropout": 1.0}, r"dropout=1\.0 is not allowed"),
        ({"attention_dropout": -0.1}, r"attention_dropout=-0\.1 is not allowed"),
        ({"rope_theta": 0.0}, r"rope_theta=0\.0 is not allowed: expected a finite number > 0"),
        ({"layer_norm_epsilon": 0.0}, r"layer_norm_epsilon=0\.0 is not allowed"),
        ({"intermediate_size": 0}, r"intermediate_size=0 is not allowed: expected an integer >= 1"),
    ],
)
def test_config_for_refuses_values_out_of_range(overrides, message):
    from hf_icl import config_for

    with pytest.raises(ValueError, match=message):
        config_for("transformer", "tiny", **overrides)
    assert config_for("transformer", "tiny", dropout=0.1, attention_dropout=0.0).dropout == 0.1


def test_an_override_out_of_range_is_one_line_on_the_command_line(tmp_path):
    outcome = call(train_main, [*TINY_RUN, "--override", "dropout=2.0", "--output-dir", str(tmp_path / "never")])
    assert_one_line_error(outcome, "argument --override", "dropout=2.0 is not allowed", "[0, 1)")


def regbench_row(text="ab|ab"):
    transitions = [{"src": 0, "symbol": "a", "dst": 1}, {"src": 1, "symbol": "b", "dst": 0}]
    return {"text": text, "start_state": 0, "transitions": transitions}


@pytest.mark.parametrize(
    "probs, rows, error, message",
    [
        ([], [], ValueError, "rows is empty"),  # was NaN
        ([np.zeros((4, 20))], [{"text": "ab|ab"}], ValueError, r"rows\[0\] lacks start_state, transitions"),  # KeyError
        ([np.zeros((4, 20))], ["ab|ab"], TypeError, r"rows\[0\] is a str, expected a mapping"),
        ([np.zeros((3, 20))], [regbench_row()], ValueError, r"probs\[0\] has shape \(3, 20\), expected \(4, V\)"),
        ([np.zeros((4, 20))], [{**regbench_row(), "transitions": [{"src": 0}]}], ValueError,
         r"rows\[0\] is not a RegBench row \(KeyError"),
        ("ab", [regbench_row()], TypeError, "probs is a str"),
    ],
)  # fmt: skip
def test_regbench_metrics_names_the_bad_argument(probs, rows, error, message):
    from hf_icl.evaluation import regbench_metrics

    with pytest.raises(error, match=message):
        regbench_metrics(probs, rows)


def test_regbench_metrics_of_good_input_is_unchanged():
    from hf_icl.evaluation import regbench_metrics

    probs = np.zeros((4, 20))
    probs[:, 1] = 1.0  # always 'a'
    # truth after a, b, |, a: {b}, {a}, {a}, {b}: 'a' is right at 2 of 4 positions, TVD 1 there, 0 elsewhere
    assert regbench_metrics([probs], [regbench_row()]) == {"accuracy": 0.5, "tvd": 0.5}


@pytest.mark.parametrize(
    "arguments, error, message",
    [
        ({"n_dims": -1}, ValueError, "n_dims=-1 is not allowed: expected an integer >= 1"),
        ({"n_points": "10"}, TypeError, "n_points='10' is not allowed: expected an integer >= 1, not str"),
        ({"seed": -3}, ValueError, "seed=-3 is not allowed: expected an integer >= 0 or a tuple of them"),
        ({"seed": (1, 2.5)}, TypeError, r"seed=\(1, 2\.5\) is not allowed"),
        ({"batch_size": 0}, ValueError, "batch_size=0 is not allowed"),  # was an empty batch
        ({"n_dims": True}, TypeError, "n_dims=True is not allowed"),
    ],
)
def test_function_class_sample_names_the_bad_argument(arguments, error, message):
    from hf_icl.tasks.function_classes import sample

    with pytest.raises(error, match=message):
        sample("linear_regression", **{"batch_size": 2, "n_points": 3, "n_dims": 2, "seed": 0, **arguments})
    assert sample("linear_regression", 2, 3, 2, (4, 5))["xs"].shape == (2, 3, 2)


def test_baselines_name_a_text_of_the_wrong_type():
    from hf_icl.baselines.baum_welch import BaumWelch
    from hf_icl.baselines.lnw import ngram_features
    from hf_icl.baselines.ngram import InContextNGram

    with pytest.raises(TypeError, match=r"text is a int \(123\), expected a str"):  # was "'int' object is not iterable"
        InContextNGram(2).predict_proba(123)
    with pytest.raises(ValueError, match="text is empty"):
        InContextNGram(2).predict_proba("")
    with pytest.raises(TypeError, match=r"text is a list"):
        BaumWelch(3).predict_proba(["ab|ab"])
    with pytest.raises(TypeError, match=r"texts is a str, expected a list of str"):
        BaumWelch(3).predict_proba_batch("ab|ab")
    with pytest.raises(TypeError, match=r"texts\[1\] is a int"):
        BaumWelch(3).predict_proba_batch(["ab|ab", 5])
    with pytest.raises(TypeError, match="text is a NoneType"):
        ngram_features(None, "counts")


# ---- item 2: leftovers of our own interrupted work are recognised --------------------------------------------------


def test_an_overwrite_killed_while_clearing_leaves_a_run_the_next_overwrite_finishes(tmp_path, monkeypatch):
    """The marker and metrics.json went first, so a kill midway left a folder that --overwrite and --resume both
    refused as holding no run; it had to be deleted by hand."""
    from cli_entry_points import fake_run_folder

    from hf_icl.training import checkpoints

    def old_run(folder: Path) -> Path:
        fake_run_folder(folder)
        for name in ("checkpoints/step_2/trainer_state.json", "model/model.safetensors", "summary.md"):
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text('{"global_step": 2}')
        return folder

    def clear_killed_at(folder: Path, kill_at: int | None) -> list[str]:
        """`clear_run_folder(folder)` killed before its deletion number `kill_at`; the names deleted before."""
        done, real_rmtree, real_unlink = [], shutil.rmtree, Path.unlink

        def delete(path, *args, **kwargs):
            if len(done) == kill_at:
                raise KeyboardInterrupt  # as a kill at this moment
            done.append(Path(path).name)
            real_rmtree(path) if Path(path).is_dir() else real_unlink(Path(path))

        with monkeypatch.context() as patch:
            patch.setattr(checkpoints.shutil, "rmtree", delete)
            patch.setattr(Path, "unlink", lambda self, missing_ok=False: delete(self))
            try:
                checkpoints.clear_run_folder(folder)
            except KeyboardInterrupt:
                pass
        return done

    order = clear_killed_at(old_run(tmp_path / "uninterrupted"), None)
    assert order[-2:] == ["metrics.json", "hf_icl_run.json"]  # the marks of a run go last
    for kill_at in range(len(order)):
        folder = old_run(tmp_path / f"run{kill_at}")
        assert clear_killed_at(folder, kill_at) == order[:kill_at]
        assert checkpoints.is_run_folder(folder), order[:kill_at]
        assert checkpoints.clear_run_folder(folder) == ["notes.txt"]
        assert [p.name for p in folder.iterdir()] == ["notes.txt"]


def test_a_sweep_point_killed_while_exporting_resumes_and_exports(finished_run, tmp_path, capsys):
    """metrics.json is written before model/, so a point killed between them said "finished before" forever."""
    from hf_icl.sweep import point_state

    folder = tmp_path / "run"
    shutil.copytree(finished_run[0], folder)
    shutil.rmtree(folder / "model")
    (folder / ".tmp-0123abcd-model").mkdir()  # the half-written export
    assert point_state(folder) == "resume"
    train_main(["--output-dir", str(folder), "--resume"])
    assert "already holds this run's evaluation; exporting the model only" in capsys.readouterr().out
    weights = load_file(folder / "model" / "model.safetensors")
    assert all(torch.equal(weights[k], finished_run[1][k]) for k in weights) and point_state(folder) == "finished"
    shutil.rmtree(folder / "checkpoints")
    shutil.rmtree(folder / "model")
    assert point_state(folder) == "finished"  # nothing left to export from: results are kept, not retrained


@pytest.mark.parametrize("garbage", [b"", b"{not json", b"\xff\xfe", b"[1, 2]"])
def test_a_garbled_point_metrics_file_is_not_finished(garbage, tmp_path):
    from hf_icl.sweep import point_state

    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "metrics.json").write_bytes(garbage)
    assert point_state(folder) == "restart"
    (folder / "checkpoints" / "step_3").mkdir(parents=True)
    (folder / "checkpoints" / "step_3" / "trainer_state.json").write_text('{"global_step": 3}')
    assert point_state(folder) == "resume"


@pytest.mark.parametrize("content", ["", "{", '{"host": "x"}'])
def test_an_unreadable_lock_is_stale_once_older_than_its_writing(content, tmp_path):
    """An empty or garbled lock (a full disk between create and write) was "another process is training it" forever."""
    from hf_icl.utils.run_locks import UNREADABLE_LOCK_GRACE_S, claimed, holder_is_gone

    lock = tmp_path / "point.lock"
    lock.write_text(content)
    assert not holder_is_gone(lock)  # its holder may be writing it right now
    old = lock.stat().st_mtime - UNREADABLE_LOCK_GRACE_S - 1
    os.utime(lock, (old, old))
    assert holder_is_gone(lock)
    with claimed(lock) as held:
        assert held
    assert not lock.exists()


KILLED_IN_CHECKPOINT = """
import os, sys
from pathlib import Path
from accelerate import Accelerator
from hf_icl.training import main

save_state = Accelerator.save_state

def dying(self, output_dir=None, **kwargs):  # killed with the step-6 checkpoint's weights half written
    save_state(self, output_dir, **kwargs)
    if Path(output_dir).name.endswith("step_6"):
        weights = Path(output_dir, "model.safetensors")
        weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
        os._exit(137)

Accelerator.save_state = dying
main(sys.argv[1:])
"""


@pytest.mark.slow
def test_a_run_killed_while_writing_a_checkpoint_resumes_from_the_last_whole_one(finished_run, tmp_path):
    """A real kill (os._exit) in the middle of the step-6 checkpoint: what is in place is step 3, whole; --resume
    redoes steps 4-6 from it, cleans the half checkpoint, and ends on the uninterrupted run's weights, bit for bit."""
    import subprocess

    from cli_entry_points import ROOT

    folder = tmp_path / "run"
    argv = [*TINY_RUN, "--max-steps", "6", "--checkpoint-every", "3", "--output-dir", str(folder)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    killed = subprocess.run([sys.executable, "-c", KILLED_IN_CHECKPOINT, *argv], capture_output=True, text=True,
                            timeout=600, env=env)  # fmt: skip
    assert killed.returncode == 137, killed.stderr[-2000:]
    assert sorted(p.name for p in (folder / "checkpoints").iterdir()) == [".tmp-step_6", "step_3"]
    assert not (folder / "model").exists() and not (folder / "metrics.json").exists()
    outcome = call(train_main, ["--output-dir", str(folder), "--resume"])
    assert outcome.status == 0 and outcome.escaped is None, (outcome.err[-2000:], outcome.escaped)
    assert "step_3 at step 3" in outcome.out
    assert not [p for p in folder.rglob("*") if p.name.startswith((".tmp-", ".old-"))]
    weights = load_file(folder / "model" / "model.safetensors")
    assert all(torch.equal(weights[k], finished_run[1][k]) for k in finished_run[1])


SWEEP_KILLED_AT = """
import os, sys
from pathlib import Path
import hf_icl.sweep as sweep

spec, source, moment = sys.argv[1:]
sweep.point_command = lambda spec, point: [sys.executable, "-c", {copy!r}, source, point.arguments["output_dir"]]
if moment == "writing":  # killed with its point's arguments half written
    write_text = Path.write_text
    def half(self, text, **kw):
        return (write_text(self, text[: len(text) // 2]), os._exit(137)) if self.name == "run.yaml" else write_text(
            self, text, **kw)
    Path.write_text = half
else:  # killed once the point's process has finished, its lock still held and the table not printed
    train_point = sweep.train_point
    sweep.train_point = lambda spec, point: (train_point(spec, point), os._exit(137))
sweep.main([spec])
"""
COPY_RUN = "import shutil, sys; shutil.copytree(sys.argv[1], sys.argv[2], dirs_exist_ok=True)"
"""A point's stand-in training process: it puts a finished run of the same settings in place (the kills here are of
the sweep's own bookkeeping around it; the run's own kills are in the tests above)."""


@pytest.mark.parametrize("moment", ["writing", "completed"])
def test_a_sweep_killed_as_its_point_completes_is_completed_by_the_next_sweep(finished_run, moment, tmp_path,
                                                                               monkeypatch):  # fmt: skip
    """A real kill of the sweep process (os._exit) while it writes the point's arguments, or once its point has
    finished but before it released the point's lock and printed its table: the next sweep completes the point
    (trains it, or says "finished before"), leaves no lock, and the finished run is untouched."""
    import subprocess

    import yaml
    from cli_entry_points import ROOT

    from hf_icl import sweep

    spec = tmp_path / "spec.yaml"
    short_prompts = {f"task_option.{name}": value for name, value in SHORT_PROMPT_OPTIONS.items()}
    base = {"architecture": "transformer", "preset": "tiny", "report_to": "none", "threads": 1, "warmup_steps": 2,
            "n_train": 100, "task_option.n_test": 24, "task_option.n_validation": 8, "max_steps": 6,
            "checkpoint_every": 3, **short_prompts}  # finished_run's settings  # fmt: skip
    spec.write_text(yaml.safe_dump({"output_root": str(tmp_path / "sweep"), "base": base}))
    killed = subprocess.run([sys.executable, "-c", SWEEP_KILLED_AT.format(copy=COPY_RUN), str(spec),
                             str(finished_run[0]), moment], capture_output=True, text=True, timeout=600,
                            env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert killed.returncode == 137, killed.stderr[-2000:]
    run, lock = tmp_path / "sweep" / "run", tmp_path / "sweep" / "run.lock"
    assert lock.is_file() and run.is_dir() == (moment == "completed")
    before = snapshot(run) if run.is_dir() else None
    monkeypatch.setattr(sweep, "point_command", lambda spec, point: [sys.executable, "-c", COPY_RUN,
                                                                     str(finished_run[0]), str(run)])  # fmt: skip
    outcome = call(sweep.main, [str(spec)])
    assert outcome.status == 0 and outcome.escaped is None, (outcome.err[-2000:], outcome.escaped)
    said = "| run | finished before |" if moment == "completed" else "| run | trained |"
    assert said in outcome.out and not lock.exists()
    assert sweep.point_state(run) == "finished" and (before is None or snapshot(run) == before)
    assert yaml.safe_load((tmp_path / "sweep" / "run.yaml").read_text())["max_steps"] == 6


# ---- item 3: damaged artefacts are named in one line, before any work ---------------------------------------------


def damage_checkpoint(folder: Path, how: str) -> None:
    import json

    config = json.loads((folder / "config.json").read_text())
    weights = folder / "model.safetensors"
    if how == "truncated weights":
        weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    elif how == "garbage weights":
        weights.write_bytes(b"\x00garbage")
    elif how == "no weights":
        weights.unlink()
    elif how == "no tokenizer.json":
        (folder / "tokenizer.json").unlink()
    elif how == "no model_type":
        config.pop("model_type")
    elif how == "3 layers over 2":
        config.update(num_hidden_layers=3, mixer_types=config["mixer_types"] * 2, ffn_types=None)
        config["mixer_types"] = config["mixer_types"][:3]
    elif how == "1 layer over 2":
        config.update(num_hidden_layers=1, mixer_types=config["mixer_types"][:1], ffn_types=None)
    elif how == "narrower":
        config.update(hidden_size=32)
    (folder / "config.json").write_text(json.dumps(config))


CHECKPOINT_DAMAGE = [
    ("truncated weights", ["model.safetensors is damaged or missing", "incomplete metadata"]),  # a traceback
    ("garbage weights", ["model.safetensors is damaged or missing"]),
    ("no weights", ["has no weights: expected model.safetensors"]),
    ("no tokenizer.json", ["tokenizer.json is missing"]),  # "You need to have sentencepiece or tiktoken installed"
    ("no model_type", ["config.json: model_type is missing"]),  # a prompt: "Do you wish to run the custom code?"
    ("3 layers over 2", ["config.json does not describe the model in model.safetensors",
                         "weights the model needs are not in it (model.layers.2."]),  # scored a partly random model
    ("1 layer over 2", ["weights in it have no place in the model (model.layers.1."]),
    ("narrower", ["weights have another shape (saved vs config)", "[20, 64] vs [20, 32]"]),
]  # fmt: skip


@pytest.mark.parametrize("how, fragments", CHECKPOINT_DAMAGE, ids=[how for how, _ in CHECKPOINT_DAMAGE])
def test_evaluate_names_a_damaged_checkpoint_file_before_any_work(finished_run, how, fragments, tmp_path, monkeypatch):
    import types

    import hf_icl.evaluate
    from hf_icl.evaluation import __main__ as evaluation
    from hf_icl.tasks import family_of

    def no_data(request):
        raise AssertionError("the data was generated before the checkpoint was checked")

    monkeypatch.setattr(evaluation, "family_of", lambda task: types.SimpleNamespace(
        head=family_of(task).head, prepare_data=no_data))  # fmt: skip
    folder = tmp_path / "model"
    shutil.copytree(finished_run[0] / "model", folder)
    damage_checkpoint(folder, how)
    argv = ["--checkpoint", str(folder), "--task", "regbench", "--output-dir", str(tmp_path / "eval")]
    assert_one_line_error(call(hf_icl.evaluate.main, argv), "argument --checkpoint", str(folder), *fragments)
    assert not (tmp_path / "eval").exists()


def test_resume_names_weights_that_do_not_fit_the_saved_settings_model(finished_run, tmp_path, capsys):
    """Saved settings that build another model than the checkpoint holds (3 layers over 2-layer weights, e.g. after a
    hand edit or a preset change): the resume failed inside Accelerate's loading, once per checkpoint, with a
    truncated key list in warnings and "no checkpoint loads (see the warnings above)" as its line."""
    import json

    from safetensors.torch import save_file

    from hf_icl.training.checkpoints import RUN_MARKER

    folder = tmp_path / "run"
    shutil.copytree(finished_run[0], folder)
    marker = json.loads((folder / RUN_MARKER).read_text())
    marker["run_config"]["overrides"] = {**marker["run_config"]["overrides"], "num_hidden_layers": 3}
    (folder / RUN_MARKER).write_text(json.dumps(marker))
    before = snapshot(folder)
    outcome = call(train_main, ["--output-dir", str(folder), "--resume"])
    assert_one_line_error(outcome, "argument --resume", str(folder / "checkpoints" / "step_6" / "model.safetensors"),
                          f"does not hold the model that the settings in {folder / RUN_MARKER} build",
                          "weights the model needs are not in it (model.layers.2.", "nothing was changed")  # fmt: skip
    assert snapshot(folder) == before
    shutil.rmtree(folder)
    shutil.copytree(finished_run[0], folder)  # a newest checkpoint with a tensor the model has no place for
    newest = folder / "checkpoints" / "step_6" / "model.safetensors"
    save_file({**load_file(newest), "stray.weight": torch.zeros(2)}, newest, metadata={"format": "pt"})
    train_main(["--output-dir", str(folder), "--resume"])
    captured = capsys.readouterr()
    assert "does not fit the model (1 weights in it have no place in the model (stray.weight))" in captured.out
    assert "step_3 at step 3" in captured.out
    weights = load_file(folder / "model" / "model.safetensors")
    assert all(torch.equal(weights[k], finished_run[1][k]) for k in finished_run[1])  # steps 4-6 redone exactly


# ---- item 6: every split is checked against the model before training ---------------------------------------------


def test_a_test_split_past_the_models_positions_fails_before_training(tmp_path):
    """The training probe saw training lengths only: the run trained to the end, then the test evaluation (lengths
    up to test_max_length) raised, and neither metrics.json nor model/ was written (--resume repeated it)."""
    small = ["--task-option", "n_per_length=2", "--task-option", "n_validation=4", "--task-option",
             "test_max_length=60", "--n-train", "16"]  # fmt: skip
    argv = ["--task", "parity_check", "--architecture", "transformer", "--preset", "tiny", "--report-to", "none",
            "--threads", "1", "--max-steps", "2", "--override", "max_position_embeddings=50", *small]  # fmt: skip
    outcome = call(train_main, [*argv, "--output-dir", str(tmp_path / "run")])
    assert outcome.escaped is None and outcome.status == 2, (outcome.status, outcome.err[-2000:], outcome.escaped)
    (error,) = [line for line in outcome.err.replace("\r", "\n").split("\n") if "error:" in line]  # data bars aside
    assert "argument --override" in error and "cannot take the test split's longest row" in error, error
    assert "covers only max_position_embeddings=50" in error and "Traceback" not in outcome.err
    assert not (tmp_path / "run").exists()
    fits = train_main([*argv[:-2], "--override", "max_position_embeddings=64", "--output-dir", str(tmp_path / "ok")])
    assert fits["train"]["steps"] == 2 and (tmp_path / "ok" / "model").is_dir()

    import hf_icl.evaluate  # evaluate's task options against the checkpoint: one line, not a traceback mid-scoring

    longer = ["--checkpoint", str(tmp_path / "ok" / "model"), "--task", "parity_check", "--task-option",
              "test_max_length=80", "--output-dir", str(tmp_path / "eval")]  # fmt: skip
    outcome = call(hf_icl.evaluate.main, longer)
    assert outcome.escaped is None and outcome.status == 2, (outcome.status, outcome.err[-2000:], outcome.escaped)
    (error,) = [line for line in outcome.err.replace("\r", "\n").split("\n") if "error:" in line]
    assert "argument --task-option" in error and "cannot take the test split's longest row" in error, error
    assert "covers only max_position_embeddings=64" in error and not (tmp_path / "eval").exists()


def test_evaluate_says_when_a_live_run_is_rewriting_the_checkpoint(finished_run, tmp_path):
    """evaluate racing a train.py --overwrite of the same run gave a misleading repo-id message."""
    import socket

    import hf_icl.evaluate
    from hf_icl.utils.run_locks import LOCK_FILE

    run = tmp_path / "run"
    shutil.copytree(finished_run[0], run)
    (run / "model" / "model.safetensors").unlink(missing_ok=True)  # the moment an --overwrite has cleared it
    argv = ["--checkpoint", str(run / "model"), "--task", "regbench", "--output-dir", str(tmp_path / "eval")]
    (run / LOCK_FILE).write_text(f"{os.getpid()} on {socket.gethostname()}\n")  # a live holder (this process)
    assert_one_line_error(call(hf_icl.evaluate.main, argv), "has no weights", f"a train.py process (pid {os.getpid()}",
                          "may be rewriting it")  # fmt: skip
    (run / LOCK_FILE).write_text(f"{2**22 + 12345} on {socket.gethostname()}\n")  # its holder is gone
    line = assert_one_line_error(call(hf_icl.evaluate.main, argv), "has no weights")
    assert "rewriting" not in line


@pytest.mark.parametrize("field, value, said", [("lr", -1.0, "lr=-1.0 is not allowed"),
                                                ("batch_size", "32", "batch_size='32' is not allowed")])  # fmt: skip
def test_a_bad_value_in_the_marker_is_blamed_on_the_marker(finished_run, field, value, said, tmp_path):
    """It was "argument --lr: ..." for a resume that passed no --lr."""
    import json

    from hf_icl.training.checkpoints import RUN_MARKER

    folder = tmp_path / "run"
    shutil.copytree(finished_run[0], folder)
    marker = json.loads((folder / RUN_MARKER).read_text())
    marker["run_config"][field] = value
    (folder / RUN_MARKER).write_text(json.dumps(marker))
    before = snapshot(folder)
    outcome = call(train_main, ["--output-dir", str(folder), "--resume"])
    assert_one_line_error(outcome, "argument --resume", f"{folder / RUN_MARKER} holds a bad saved setting", said)
    assert snapshot(folder) == before


# ---- item 8: generated cases of the strict YAML rules --------------------------------------------------------------

from hypothesis import assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

YAML_WORDS = {"yes", "no", "on", "off", "true", "false", "null"}  # PyYAML (YAML 1.1) reads these as bool or None
KEYS = st.lists(
    st.from_regex(r"[a-z][a-z_]{0,7}", fullmatch=True).filter(lambda key: key not in YAML_WORDS),
    min_size=1, max_size=6, unique=True,
)  # fmt: skip


@given(keys=KEYS, data=st.data())
def test_any_key_given_twice_is_named_with_both_lines(keys, data):
    from hf_icl.utils.strict_yaml import StrictYAMLError, read_yaml

    twice = data.draw(st.sampled_from(keys))
    lines = [f"{key}: {i}" for i, key in enumerate(keys)]
    at = data.draw(st.integers(keys.index(twice) + 1, len(lines)))
    lines.insert(at, f"{twice}: again")
    with pytest.raises(StrictYAMLError, match=rf"key '{twice}' is given twice, at lines {keys.index(twice) + 1} and "
                       rf"{at + 1}"):  # fmt: skip
        read_yaml("\n".join(lines))
    assert read_yaml("\n".join(lines[:at] + lines[at + 1 :])) == {key: i for i, key in enumerate(keys)}


@settings(max_examples=40, deadline=None)
@given(keep=st.floats(0, 1, exclude_max=True), garbage=st.binary(max_size=24))
def test_a_weights_file_damaged_anywhere_is_named_by_evaluate_and_resume(finished_run, keep, garbage):
    """Fuzzed damage (cut at any length, then optional garbage, the length changed): evaluate's check and resume's
    both name the file, never a traceback and never a pass. (Bytes changed in place inside the tensor data, the
    length kept, are not detectable: safetensors holds no checksum.)"""
    import tempfile

    from hf_icl.evaluation.checkpoint_files import check_checkpoint_files
    from hf_icl.training.checkpoints import checkpoint_problem

    with tempfile.TemporaryDirectory() as folder:
        model, checkpoint = Path(folder) / "model", Path(folder) / "step_6"
        shutil.copytree(finished_run[0] / "model", model)
        shutil.copytree(finished_run[0] / "checkpoints" / "step_6", checkpoint)
        for weights in (model / "model.safetensors", checkpoint / "model.safetensors"):
            data = weights.read_bytes()
            damaged = data[: int(keep * len(data))] + garbage
            assume(len(damaged) != len(data))
            weights.write_bytes(damaged)
        with pytest.raises(ValueError, match=r"model\.safetensors is damaged or missing"):
            check_checkpoint_files(model)
        assert checkpoint_problem(checkpoint).startswith("model.safetensors is damaged")


@given(value=st.floats(allow_nan=False, allow_infinity=False))
def test_exponent_notation_reads_back_as_the_number(value):
    from hf_icl.utils.strict_yaml import read_yaml

    assert read_yaml(f"lr: {value:e}") == {"lr": float(f"{value:e}")}


@given(text=st.from_regex(r"[-+]?[0-9_.]{0,4}[eE][-+]?[0-9_]{0,2}", fullmatch=True))
def test_a_number_like_word_is_a_number_or_refused_never_text(text):
    """Unquoted, a word that starts like a number and has digits or dots before its exponent is a float or an error
    naming the line, never text (`.e3` was text, or a float that failed to convert)."""
    from hf_icl.utils.strict_yaml import StrictYAMLError, read_yaml

    # YAML picks a scalar's resolvers by its first character: only a word that starts like a number can be one
    mantissa = re.split("[eE]", text, maxsplit=1)[0]
    number_like = text[:1] in set("-+0123456789.") and any(c in "0123456789." for c in mantissa)
    try:
        value = read_yaml(f"x: {text}")["x"]
    except StrictYAMLError as err:
        assert number_like and f"{text!r} at line 1 is not a number" in str(err)
    else:
        assert isinstance(value, float) if number_like else value == text


def test_a_run_killed_in_its_model_export_is_finished_by_resume(tmp_path):
    """Killed for real (os._exit) with the weights half exported: metrics.json is there, model/ is not; the sweep sees
    a point to resume, and --resume exports the model without training or evaluating again."""
    import subprocess

    from cli_entry_points import ROOT

    from hf_icl.sweep import point_state

    folder = tmp_path / "run"
    command = [sys.executable, str(ROOT / "train.py"), *TINY_RUN, "--max-steps", "2", "--output-dir", str(folder)]
    killed = subprocess.run(command, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "OMP_NUM_THREADS": "1", "HF_ICL_TEST_KILL_IN_EXPORT": "1"})  # fmt: skip
    assert killed.returncode == 137, killed.stderr[-2000:]
    assert (folder / "metrics.json").is_file() and not (folder / "model").exists()
    assert [p.name for p in folder.glob(".tmp-*-model")]  # the half-written export
    assert point_state(folder) == "resume"
    outcome = call(train_main, ["--output-dir", str(folder), "--resume"])
    assert outcome.status == 0 and outcome.escaped is None, outcome.err[-2000:]
    assert "exporting the model only" in outcome.out
    assert (folder / "model" / "model.safetensors").is_file() and point_state(folder) == "finished"
    assert not list(folder.glob(".tmp-*"))


@pytest.mark.parametrize("how", ["truncated weights", "no tokenizer.json", "no model_type"])
def test_the_analysis_commands_name_a_damaged_checkpoint_file(finished_run, how, tmp_path):
    from hf_icl.analysis.__main__ import main as analysis_main

    folder = tmp_path / "model"
    shutil.copytree(finished_run[0] / "model", folder)
    damage_checkpoint(folder, how)
    argv = ["attention", "--checkpoint", str(folder), "--output", str(tmp_path / "analysis")]
    fragment = dict(CHECKPOINT_DAMAGE)[how][0]
    assert_one_line_error(call(analysis_main, argv), "argument --checkpoint", str(folder), fragment)
    assert not (tmp_path / "analysis").exists()
