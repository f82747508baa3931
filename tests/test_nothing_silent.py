"""Nothing silent (issue 53): an exact resume under dropout, random-generator states checked like weights, strict
config files, exclusive temporary files, a plug-in import that leaves `sys.path` alone, and a Python API that names
the argument it refuses."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from cli_entry_points import call, snapshot
from safetensors.torch import load_file
from test_cli_safety import TINY_RUN, assert_one_line_error

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
    from hf_icl.strict_yaml import read_yaml

    text = "lr: 1e-5\nb: .5e3\nc: 1_000e2\nd: e5\ne: '.e3'\nbase: &b {x: 1, y: 2}\nchild: {<<: *b, x: 3}\nz: *b\n"
    assert read_yaml(text) == {
        "lr": 1e-5, "b": 500.0, "c": 100000.0, "d": "e5", "e": ".e3", "base": {"x": 1, "y": 2},
        "child": {"x": 3, "y": 2}, "z": {"x": 1, "y": 2},
    }  # fmt: skip
