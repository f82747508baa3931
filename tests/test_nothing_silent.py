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
