"""Chain-of-thought I/O is scored on the model's own intermediate steps (P5 Table 1's CoT-I/O inference)."""

import pytest
import torch

import hf_icl
from hf_icl.tasks.function_classes import sample
from hf_icl.tasks.function_classes.evaluation import evaluate_prompts, model_predictions, own_step_predictions
from hf_icl.tasks.function_classes.function_class_data import model_fields


def cot_model(architecture: str):
    config = hf_icl.config_for(architecture, "tiny", **model_fields("cot_io", 4, 4, hidden_size=3))
    torch.manual_seed(0)
    return hf_icl.AutoModelForInContextRegression.from_config(config).eval()


@pytest.mark.parametrize("architecture", ["transformer", "mamba"])
def test_own_steps_equal_a_full_length_forward_with_each_step_replaced(architecture):
    model = cot_model(architecture)
    prompts = sample("cot_io", 3, 5, 4, seed=1, hidden_size=3)
    xs, ys, ss = prompts["xs"], prompts["ys"], prompts["ss"]
    with torch.no_grad():
        own = model(xs=xs, ys=ys, ss=ss).step_predictions  # (B, N, k)
        expected = []
        for i in range(xs.shape[1]):  # brute force: the whole prompt, only s_i swapped for ŝ_i
            steps = ss.clone()
            steps[:, i] = own[:, i]
            expected.append(model(xs=xs, ys=ys, ss=steps).predictions[:, i])
    torch.testing.assert_close(own_step_predictions(model, prompts, batch_size=2), torch.stack(expected, 1))
    # an untrained model's steps are wrong, so feeding them must change ŷ (the evaluation is not teacher-forced)
    assert not torch.allclose(own_step_predictions(model, prompts), model_predictions(model, prompts))


def test_cot_results_hold_own_and_teacher_forced_scores():
    model = cot_model("transformer")
    prompts = sample("cot_io", 4, 5, 4, seed=2, hidden_size=3)
    results = evaluate_prompts("cot_io", model, prompts, 4, {"hidden_size": 3}, baseline_names=("least_squares",))
    own = ((own_step_predictions(model, prompts) - prompts["ys"]) ** 2 / 4)[:, -1].mean()
    assert results["model"]["error_final"] == pytest.approx(float(own), rel=1e-5)
    assert set(results["model_teacher_forced_steps"]) == {"error_mean", "error_final", "final_examples"}
    assert results["model"] != results["model_teacher_forced_steps"]
    assert set(results["curves"]) == {"model", "model_teacher_forced_steps", "least_squares"}
