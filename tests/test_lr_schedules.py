"""Schedules from the library (issue 55, item 7) and runs extended without warming up again (item 4): any
step-based `transformers.get_scheduler` name trains beside hf_icl's own `cosine`, `constant` and `wsd` (which keep
their shape), and `--resume --allow-changed-settings --max-steps N` recomputes the schedule for the new length
without going back to the peak rate, and records it."""

from __future__ import annotations

import json

import pytest
import torch
from cli_entry_points import call
from test_cli_safety import assert_one_line_error
from tiny_runs import TINY_RUN
from transformers import get_linear_schedule_with_warmup

from hf_icl.training import main as train_main
from hf_icl.training.arguments import RunArguments
from hf_icl.training.checkpoints import RUN_MARKER
from hf_icl.training.schedules import LIBRARY_SCHEDULES, OWN_SCHEDULES, extension_cap, lr_multiplier


def test_the_library_names_are_offered_and_the_own_ones_stay_own():
    assert OWN_SCHEDULES == ("cosine", "constant", "wsd")
    assert {"linear", "cosine_with_restarts", "polynomial", "constant_with_warmup", "warmup_stable_decay"} <= set(
        LIBRARY_SCHEDULES
    )
    assert not set(OWN_SCHEDULES) & set(LIBRARY_SCHEDULES) and "reduce_lr_on_plateau" not in LIBRARY_SCHEDULES


def test_own_schedules_keep_their_values():
    """Hand-computed: lr 1e-3 → 1e-5, warm-up 10 steps from 0, 100 steps, decay ratio 0.2."""
    base = dict(lr=1e-3, min_lr=1e-5, warmup_steps=10, warmup_start_lr=0.0, decay_ratio=0.2)
    wsd = lr_multiplier(RunArguments(**base, lr_schedule="wsd"), 100)
    assert [wsd(s) for s in (0, 5, 10, 80, 90, 100)] == pytest.approx([0.0, 0.5, 1.0, 1.0, 0.505, 0.01])
    cosine = lr_multiplier(RunArguments(**base, lr_schedule="cosine"), 100)
    assert [cosine(s) for s in (5, 10, 55, 100)] == pytest.approx([0.5, 1.0, 0.505, 0.01])
    constant = lr_multiplier(RunArguments(**base, lr_schedule="constant"), 100)
    assert [constant(s) for s in (5, 10, 100)] == pytest.approx([0.5, 1.0, 1.0])


def test_linear_is_the_library_schedule():
    args = RunArguments(lr=1e-3, warmup_steps=4, lr_schedule="linear")
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1e-3)
    reference = get_linear_schedule_with_warmup(optimizer, 4, 40).lr_lambdas[0]
    ours = lr_multiplier(args, 40)
    assert [ours(step) for step in range(41)] == [reference(step) for step in range(41)]


@pytest.mark.parametrize("name", LIBRARY_SCHEDULES)
def test_every_library_schedule_gives_a_multiplier_at_every_step(name):
    factor = lr_multiplier(RunArguments(lr=1e-3, min_lr=1e-5, warmup_steps=3, lr_schedule=name), 30)
    values = [factor(step) for step in range(31)]
    assert all(0.0 <= value <= 1.0 + 1e-9 for value in values), values
    assert max(values) == pytest.approx(1.0)


def test_a_library_schedule_with_a_time_budget_is_one_line(tmp_path):
    argv = [*TINY_RUN, "--max-steps", "3", "--lr-schedule", "linear", "--max-train-minutes", "1"]
    outcome = call(train_main, [*argv, "--output-dir", str(tmp_path / "run")])
    assert_one_line_error(outcome, "argument --lr-schedule", "'linear'", "--max-train-minutes")


def test_lr_schedule_linear_trains(tmp_path):
    argv = [*TINY_RUN, "--max-steps", "3", "--lr-schedule", "linear", "--log-every", "1", "--lr", "0.003"]
    metrics = train_main([*argv, "--output-dir", str(tmp_path / "run")])
    assert metrics["run_config"]["lr_schedule"] == "linear" and metrics["train"]["steps"] == 3
    rates = [record["lr"] for record in metrics["train"]["history"]]
    assert rates == pytest.approx([0.0015, 0.003, 0.0])  # 2 warm-up steps from 0, then linear to 0 at step 3


def test_extension_cap_of_a_finished_and_of_an_interrupted_run():
    args = RunArguments(lr=1e-3, min_lr=1e-5, warmup_steps=2, decay_ratio=0.2, max_steps=20)
    finished = extension_cap(args, {"max_steps": (10, 20)}, 10, 20, 1, None)
    assert finished == {"from_step": 10, "multiplier": pytest.approx(0.01), "total_steps": 20, "saved_total_steps": 10}
    interrupted = extension_cap(args, {"max_steps": (10, 20)}, 5, 20, 1, None)  # before the saved decay
    assert interrupted["multiplier"] == pytest.approx(1.0)
    assert extension_cap(args, {"lr": (1e-2, 1e-3)}, 10, 20, 1, None) == {}  # same length: nothing to cap
    assert extension_cap(args, {"max_steps": (10, 20)}, 1, 20, 1, None) == {}  # in the warm-up: it continues
    again = extension_cap(args, {"max_steps": (20, 40)}, 20, 40, 1, finished)  # a second extension keeps the first
    assert again["multiplier"] == pytest.approx(0.01)
    capped = lr_multiplier(args, 20, cap=finished)
    assert capped(9) == 1.0 and capped(12) == pytest.approx(0.01)  # the cap holds from the resumed step on


@pytest.mark.slow
def test_an_extended_run_does_not_warm_up_again(tmp_path):
    folder = tmp_path / "run"
    train_main([*TINY_RUN, "--max-steps", "6", "--checkpoint-every", "3", "--log-every", "1", "--lr", "0.003",
                "--output-dir", str(folder)])  # fmt: skip
    final = json.loads((folder / "metrics.json").read_text())["train"]["history"][-1]["lr"]
    argv = ["--output-dir", str(folder), "--resume", "--allow-changed-settings", "--max-steps", "12",
            "--log-every", "1", "--checkpoint-every", "3"]  # fmt: skip
    metrics = train_main(argv)
    after = [record["lr"] for record in metrics["train"]["history"] if record["step"] > 6]
    assert len(after) == 6 and max(after) <= final * (1 + 1e-9) < 0.003  # never back at the peak
    (change,) = metrics["setting_changes"]
    assert change["lr_schedule"]["total_steps"] == 12 and change["lr_schedule"]["saved_total_steps"] == 6
    assert change["lr_schedule"]["max_lr"] == pytest.approx(final)
    assert json.loads((folder / RUN_MARKER).read_text())["setting_changes"] == metrics["setting_changes"]
    state = json.loads((folder / "checkpoints" / "step_12" / "trainer_state.json").read_text())
    assert state["lr_schedule_cap"]["multiplier"] == pytest.approx(final / 0.003)  # a later resume keeps the cap
