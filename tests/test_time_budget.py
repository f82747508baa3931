"""`--max-train-minutes`: the run stops on a training-time budget, and the schedule runs on the larger of the step
and the time fraction, so a budgeted run ends with its learning rate decayed (issue 30's time-to-quality lever)."""

from __future__ import annotations

import pytest
from cli_entry_points import call
from test_cli_safety import assert_one_line_error
from tiny_runs import TINY_RUN

from hf_icl.training import main as train_main
from hf_icl.training.arguments import RunArguments
from hf_icl.training.loop import TrainingClock, lr_multiplier

PEAK, FLOOR = 1e-3, 1e-5


def decayed(share: float) -> float:
    """The wsd multiplier `share` of the way through the decay."""
    return (PEAK + (FLOOR - PEAK) * share) / PEAK


def test_wsd_decay_starts_at_its_share_of_the_budget():
    args = RunArguments(lr=PEAK, min_lr=FLOOR, warmup_steps=0, decay_ratio=0.2, lr_schedule="wsd")
    clock = TrainingClock(10)
    factor = lr_multiplier(args, 1000, clock)
    for fraction, expected in [(0.0, 1.0), (0.5, 1.0), (0.8, 1.0), (0.9, decayed(0.5)), (1.0, decayed(1.0))]:
        clock.fraction = fraction
        assert factor(100) == pytest.approx(expected), fraction
    clock.fraction = 0.1  # the steps still decay the rate when they run out first
    assert factor(900) == pytest.approx(decayed(0.5))
    assert lr_multiplier(args, 1000)(900) == pytest.approx(decayed(0.5))  # no budget: by steps, as before


def test_cosine_follows_the_time_fraction_and_the_warm_up_stays_in_steps():
    args = RunArguments(lr=PEAK, min_lr=FLOOR, warmup_steps=10, warmup_start_lr=0.0, lr_schedule="cosine")
    clock = TrainingClock(5)
    factor = lr_multiplier(args, 1000, clock)
    clock.fraction = 1.0
    assert factor(5) == pytest.approx(0.5)  # warm-up: half-way to the peak whatever the clock says
    assert factor(20) == pytest.approx(FLOOR / PEAK)
    clock.fraction = 0.5
    assert factor(20) == pytest.approx((FLOOR + (PEAK - FLOOR) * 0.5) / PEAK)


def test_the_clock_without_a_budget_never_expires():
    clock = TrainingClock(None)
    clock.update(1e9)
    assert clock.fraction == 0.0 and not clock.expired
    budgeted = TrainingClock(1)
    budgeted.update(60.0)
    assert budgeted.expired


def test_a_time_budget_ends_the_run_early_and_decayed(tmp_path):
    argv = [*TINY_RUN, "--max-steps", "100000", "--max-train-minutes", "0.05", "--log-every", "100000"]
    metrics = train_main([*argv, "--output-dir", str(tmp_path / "run")])
    train = metrics["train"]
    assert 2 < train["steps"] < 100_000 and train["stopped_by"] == "max_train_minutes"
    assert train["history"][-1]["step"] == train["steps"]  # the last step is logged
    assert train["history"][-1]["lr"] == pytest.approx(metrics["run_config"]["min_lr"])
    assert train["wall_time_s"] >= 3.0


def test_a_run_that_ends_by_steps_says_so(tmp_path):
    argv = [*TINY_RUN, "--max-steps", "3", "--max-train-minutes", "60", "--output-dir", str(tmp_path / "run")]
    assert train_main(argv)["train"]["stopped_by"] == "steps"


def test_a_budget_that_is_not_positive_is_refused():
    outcome = call(train_main, [*TINY_RUN, "--max-steps", "3", "--max-train-minutes", "0"])
    assert_one_line_error(outcome, "max_train_minutes", "0")
