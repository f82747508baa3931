"""The task-family opening: a family defined here, registered once, trains through `train.py`'s entry function and
evaluates through `python -m hf_icl.evaluate` with no edit anywhere else; online sampling, curricula, continuous
inputs and exact resume after a kill."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

import hf_icl.evaluate
from hf_icl.tasks import (
    EvalRequest,
    TaskData,
    TaskEntry,
    TaskFamily,
    family_of,
    list_tasks,
    register_family,
    unregister_family,
)
from hf_icl.tasks.objectives import mean_squared_error
from hf_icl.tasks.online import OnlineBatches, OnlineSampler, StepCurriculum
from hf_icl.training import main

ROOT = Path(__file__).resolve().parents[1]
TOY = "toy_two_step_sum"


class TwoStepSumSampler(OnlineSampler):
    """x_t ~ N(0, I_3); the target is x_t[0] + x_{t−1}[0], so a model must mix in the previous position."""

    def sample_batch(self, batch_size, rng):
        xs = rng.standard_normal((batch_size, self.params["n_points"], 3)).astype(np.float32)  # (B, T, 3)
        ys = xs[:, :, :1].copy()
        ys[:, 1:] += xs[:, :-1, :1]  # (B, T, 1)
        return {"inputs": torch.from_numpy(xs), "targets": torch.from_numpy(ys)}


def prepare_data(request):
    sampler = TwoStepSumSampler(n_points=int(request.options.get("n_points", 8)))
    return TaskData(train=sampler, collate=None, model_fields={"input_dim": 3, "output_dim": 1}, description={})


def evaluate(request: EvalRequest) -> dict:
    batch = request.data.train.sample_batch(64, np.random.default_rng(1234))
    with torch.no_grad():
        predictions = request.model.eval()(inputs=batch["inputs"]).predictions
    mse = float(((predictions - batch["targets"]) ** 2).mean())
    return {"model": {"mse": mse}, "baselines": {"zero": {"mse": float((batch["targets"] ** 2).mean())}}}


TOY_FAMILY = TaskFamily(
    name="toy_regression",
    tasks={TOY: TaskEntry(builder=None, config_name=None, option_fields=("n_points",))},
    prepare_data=prepare_data,
    head="regression",
    objective=mean_squared_error,
    evaluate=evaluate,
    run_defaults={"max_steps": 12, "lr": 1e-2, "warmup_steps": 0, "batch_size": 16},
    metric_note="Mean squared error of x_t[0] + x_{t-1}[0].",
)


def register():
    if TOY not in list_tasks():
        register_family(TOY_FAMILY)


@pytest.fixture(autouse=True, scope="module")
def toy_family_registered():
    """Registered for this module's tests only: a family left registered at import would join the task list that
    other modules parametrize over at collection (a test-order leak in a shared worker)."""
    register()
    yield
    unregister_family(TOY_FAMILY.name)


TINY = ["--task", TOY, "--preset", "tiny", "--report-to", "none", "--threads", "1", "--log-every", "1"]


def losses(run_dir: Path) -> list[float]:
    return [h["loss"] for h in json.loads((run_dir / "metrics.json").read_text())["train"]["history"]]


def test_toy_family_trains_and_evaluates_through_the_public_entry_points(tmp_path):
    metrics = main([*TINY, "--output-dir", str(tmp_path / "run")])
    assert metrics["task_family"] == "toy_regression" and metrics["train"]["steps"] == 12
    assert metrics["train"]["epochs"] is None  # online: no epochs
    assert (tmp_path / "run" / "model" / "model.safetensors").is_file()
    assert not (tmp_path / "run" / "model" / "tokenizer.json").exists()
    card = (tmp_path / "run" / "model" / "README.md").read_text()
    assert "x_t[0] + x_{t-1}[0]" in card and "AutoModel.from_pretrained(" in card and "model(inputs=" in card
    evaluated = hf_icl.evaluate.main(
        ["--checkpoint", str(tmp_path / "run" / "model"), "--task", TOY, "--output-dir", str(tmp_path / "eval")]
    )
    assert evaluated["test"]["model"]["mse"] == pytest.approx(metrics["test"]["model"]["mse"], rel=1e-5)
    assert json.loads((tmp_path / "eval" / "metrics.json").read_text())["task_family"] == "toy_regression"


@pytest.mark.parametrize("architecture", ["transformer", "mamba", "gla"])
def test_continuous_inputs_train_through_the_shared_loop(tmp_path, architecture):
    metrics = main([*TINY, "--architecture", architecture, "--max-steps", "30", "--output-dir", str(tmp_path)])
    values = losses(tmp_path)
    assert all(np.isfinite(values))
    assert np.mean(values[-5:]) < 0.6 * np.mean(values[:3]), values
    assert metrics["test"]["model"]["mse"] < metrics["test"]["baselines"]["zero"]["mse"]


def test_curriculum_changes_sampler_parameters_by_step_and_is_logged(tmp_path):
    metrics = main([*TINY, "--max-steps", "6", "--curriculum", "n_points=4:10:3:2", "--output-dir", str(tmp_path)])
    assert [h["n_points"] for h in metrics["train"]["history"]] == [4, 4, 7, 7, 10, 10]
    curriculum = StepCurriculum.parse("n_points=4:10:3:2")
    sampler = TwoStepSumSampler(n_points=99)
    shapes = [b["inputs"].shape[1] for _, b in zip(range(7), OnlineBatches(sampler, 2, 0, 0, [curriculum], 0))]
    assert shapes == [4, 4, 7, 7, 10, 10, 10]


def test_online_batches_depend_on_seed_rank_and_step_only():
    def batch(seed, rank, step):
        return next(iter(OnlineBatches(TwoStepSumSampler(n_points=5), 2, seed, rank, start_step=step)))["inputs"]

    stream = iter(OnlineBatches(TwoStepSumSampler(n_points=5), 2, seed=3, rank=1))
    third = [next(stream) for _ in range(3)][2]["inputs"]
    assert torch.equal(third, batch(3, 1, 2))
    assert not torch.equal(batch(3, 1, 2), batch(3, 0, 2)) and not torch.equal(batch(3, 1, 2), batch(4, 1, 2))


def run_in_subprocess(argv, env=None):
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT / 'tests')!r}); import test_task_family; "
        f"test_task_family.register(); from hf_icl.training import main; main({argv!r})"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})},
    )


def test_resume_after_kill_reproduces_online_batches_and_weights(tmp_path):
    common = [*TINY, "--max-steps", "9", "--checkpoint-every", "3", "--curriculum", "n_points=4:12:4:4"]
    main([*common, "--output-dir", str(tmp_path / "straight")])  # in this process: only the kill needs its own
    killed = run_in_subprocess([*common, "--output-dir", str(tmp_path / "resumed")], {"HF_ICL_TEST_KILL_AT_STEP": "5"})
    assert killed.returncode == 137
    resumed = run_in_subprocess([*common, "--output-dir", str(tmp_path / "resumed"), "--resume"])
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resumed from" in resumed.stdout + resumed.stderr
    a = load_file(tmp_path / "straight" / "model" / "model.safetensors")
    b = load_file(tmp_path / "resumed" / "model" / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert losses(tmp_path / "straight") == losses(tmp_path / "resumed")


def test_family_lookup_errors_name_the_registered_tasks():
    with pytest.raises(ValueError, match="task='chess' is not one of: .*regbench"):
        family_of("chess")
    with pytest.raises(ValueError, match="already registered"):
        register_family(TOY_FAMILY)
    with pytest.raises(ValueError, match="head='decoder' is not one of: causal_lm, regression"):
        TaskFamily("bad", {}, prepare_data, "decoder", mean_squared_error, evaluate)
