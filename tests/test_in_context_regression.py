"""In-context regression models (DESIGN §2.1, §5.5) for every architecture: `model(xs=, ys=)` shapes and loss, the
prefix property (prediction i sees only x₁, y₁, …, x_i), streaming through the cache ≡ the parallel form,
chain-of-thought, the Auto class, exact save/load and the standard remote-code route, and training through
`train.py`'s entry function on the suite's tasks."""

import json
import subprocess
import sys
import textwrap

import pytest
import torch

import hf_icl
from hf_icl.architectures.auto import AutoModelForInContextRegression
from hf_icl.training import main

ARCHS = hf_icl.list_architectures()
EXTRA = {"regular_gpt": {"fixed_depth": 3}}  # adaptive depth reads the input length unless fixed (P2 §3.2)


def tiny(arch, input_dim=3, output_dim=1, seed=0, **overrides):
    torch.manual_seed(seed)
    config = hf_icl.config_for(
        arch, "tiny", input_dim=input_dim, output_dim=output_dim, **EXTRA.get(arch, {}), **overrides
    )
    model = AutoModelForInContextRegression.from_config(config).eval()
    with torch.no_grad():  # off the initial values, so a load that re-initialises cannot pass
        for parameter in model.parameters():
            parameter.add_(0.05 * torch.randn_like(parameter))
    return model


def prompts(batch=2, points=5, dims=3, seed=1, output_dim=1):
    generator = torch.Generator().manual_seed(seed)
    xs = torch.randn(batch, points, dims, generator=generator)
    ys = torch.randn(batch, points, *(() if output_dim == 1 else (output_dim,)), generator=generator)
    return xs, ys


@pytest.mark.parametrize("arch", ARCHS)
def test_prefix_property_and_streaming_equal_the_parallel_form(arch):
    model = tiny(arch)
    xs, ys = prompts()
    with torch.no_grad():
        out = model(xs=xs, ys=ys)
        assert out.predictions.shape == (2, 5)
        torch.testing.assert_close(out.loss, ((out.predictions - ys) ** 2).mean())
        changed_xs, changed_ys = xs.clone(), ys.clone()
        changed_xs[:, 3:] += 5.0
        changed_ys[:, 2:] -= 3.0  # y₃ and later may not reach predictions 1..3 (x₄ is new only from 4 on)
        other = model(xs=changed_xs, ys=changed_ys).predictions
        torch.testing.assert_close(other[:, :3], out.predictions[:, :3], atol=1e-5, rtol=0)
        assert not torch.allclose(other[:, 3:], out.predictions[:, 3:])  # ... but do reach later ones
        streamed = model.predict_streaming(xs, ys)
    torch.testing.assert_close(streamed, out.predictions, atol=1e-5, rtol=0)


@pytest.mark.parametrize("arch", ["transformer", "mamba", "mambaformer", "gla"])
def test_vector_outputs_queries_and_masked_loss(arch):
    model = tiny(arch, input_dim=4, output_dim=4)
    xs, ys = prompts(points=6, dims=4, output_dim=4)
    mask = torch.tensor([[False, False, False, False, True, True]] * 2)
    with torch.no_grad():
        out = model(xs=xs, ys=ys[:, :4], targets=ys, loss_mask=mask)  # x₅, x₆ are bare queries (vector MQAR)
        assert out.predictions.shape == (2, 6, 4)
        torch.testing.assert_close(out.loss, ((out.predictions - ys)[:, 4:] ** 2).mean())
        torch.testing.assert_close(model.predict_streaming(xs, ys[:, :4]), out.predictions, atol=1e-5, rtol=0)
        later = model(xs=xs, ys=ys).predictions  # answers fed after the queries cannot change them (causal)
    torch.testing.assert_close(later[:, :5], out.predictions[:, :5], atol=1e-5, rtol=0)


def test_y_tokens_replace_the_padded_label():
    model = tiny("transformer")
    xs, ys = prompts()
    padded = torch.nn.functional.pad(ys[..., None], (0, 2))
    with torch.no_grad():
        same = model(xs=xs, ys=ys, y_tokens=padded).predictions
        torch.testing.assert_close(same, model(xs=xs, ys=ys).predictions)
        moved = model(xs=xs, ys=ys, y_tokens=padded + 1.0).predictions
    assert torch.equal(moved[:, 0], same[:, 0]) and not torch.allclose(moved[:, 1:], same[:, 1:])


@pytest.mark.parametrize("arch", ["transformer", "mamba"])
def test_chain_of_thought_reads_steps_and_targets_in_their_own_slots(arch):
    model = tiny(arch, input_dim=3, output_dim=1, cot_dim=2)
    assert model.read_in_steps.in_features == 2 and model.read_out_steps.out_features == 2
    xs, ys = prompts()
    ss = torch.randn(2, 5, 2)
    with torch.no_grad():
        out = model(xs=xs, ys=ys, ss=ss)
        assert out.predictions.shape == (2, 5) and out.step_predictions.shape == (2, 5, 2)
        expected = ((out.predictions - ys) ** 2).mean() + ((out.step_predictions - ss) ** 2).sum(-1).mean()
        torch.testing.assert_close(out.loss, expected)
        torch.testing.assert_close(model.predict_streaming(xs, ys, ss=ss), out.predictions, atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="ss .* missing but config.cot_dim=2"):
        model(xs=xs, ys=ys)


def test_errors_name_what_is_wrong():
    config = hf_icl.config_for("gla", "tiny", input_dim=3, output_dim=1, ngram_heads=[{"layer": 0, "orders": [1]}])
    with pytest.raises(ValueError, match="n-gram heads match token ids"):
        AutoModelForInContextRegression.from_config(config)
    model = tiny("transformer", input_dim=2, output_dim=3)
    with pytest.raises(ValueError, match="output_dim must not exceed input_dim"):
        model(xs=torch.zeros(1, 2, 2), ys=torch.zeros(1, 2, 3))
    with pytest.raises(ValueError, match="xs has width 5 but config.input_dim=2"):
        model(xs=torch.zeros(1, 2, 5))
    with pytest.raises(ValueError, match="exactly one of inputs"):
        model()
    with pytest.raises(ValueError, match="cot_dim=2 needs continuous inputs"):
        hf_icl.config_for("transformer", "tiny", cot_dim=2)


def test_auto_class_maps_every_architecture():
    for arch in ARCHS:
        config = hf_icl.config_for(arch, "tiny", input_dim=2, output_dim=1)
        assert type(AutoModelForInContextRegression.from_config(config)) is hf_icl.ARCHITECTURES[arch].regression_class


REMOTE = textwrap.dedent(
    """
    import json, sys
    sys.modules["hf_icl"] = None  # hf_icl must not be importable here
    import torch
    from transformers import AutoModel
    jobs, results = json.load(open(sys.argv[1])), {}
    for name, job in jobs.items():
        model = AutoModel.from_pretrained(job["folder"], trust_remote_code=True).eval()
        with torch.no_grad():
            out = model(xs=torch.tensor(job["xs"]), ys=torch.tensor(job["ys"]))
        results[name] = {"module": type(model).__module__, "predictions": out.predictions.tolist(),
                         "loss": out.loss.item()}
    print(json.dumps(results))
    """
)


def test_save_load_and_remote_code_round_trip_exactly(tmp_path):
    xs, ys = prompts(points=6)
    jobs, expected = {}, {}
    for arch in ("transformer", "mamba", "mambaformer"):
        model = tiny(arch)
        model.save_pretrained(tmp_path / arch)
        loaded = AutoModelForInContextRegression.from_pretrained(tmp_path / arch).eval()
        assert type(loaded) is type(model)
        with torch.no_grad():
            expected[arch] = model(xs=xs, ys=ys).predictions
            torch.testing.assert_close(loaded(xs=xs, ys=ys).predictions, expected[arch], atol=0, rtol=0)
        assert json.loads((tmp_path / arch / "config.json").read_text())["auto_map"]["AutoModel"].endswith(
            type(model).__name__
        )
        jobs[arch] = {"folder": str(tmp_path / arch), "xs": xs.tolist(), "ys": ys.tolist()}
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    env = {"HF_MODULES_CACHE": str(tmp_path / "modules"), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-c", REMOTE, str(tmp_path / "jobs.json")],
        capture_output=True,
        text=True,
        env={**env, "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    remote = json.loads(result.stdout.strip().splitlines()[-1])
    for arch, predictions in expected.items():
        assert not remote[arch]["module"].startswith("hf_icl")
        torch.testing.assert_close(torch.tensor(remote[arch]["predictions"]), predictions, atol=0, rtol=0)


# --- training through train.py's entry function ------------------------------------------------------------------

RUN = ["--preset", "tiny", "--report-to", "none", "--threads", "1", "--log-every", "1", "--checkpoint-every", "1000"]


def test_linear_regression_trains_with_its_curriculum_and_writes_curves(tmp_path):
    metrics = main(
        [*RUN, "--task", "linear_regression", "--max-steps", "40", "--lr", "3e-3", "--batch-size", "32",
         "--task-option", "n_dims=4", "--task-option", "n_points=9", "--task-option", "n_test=64",
         "--curriculum", "n_dims=2:4:1:10", "--curriculum", "n_points=5:9:2:10", "--output-dir", str(tmp_path)]
    )  # fmt: skip
    history = metrics["train"]["history"]
    assert [h["n_dims"] for h in history][::10] == [2, 3, 4, 4] and history[-1]["n_points"] == 9
    test = metrics["test"]
    assert set(test["baselines"]) == {"least_squares", "averaging", "3_nearest_neighbors"}
    assert len(test["curves"]["model"]) == 9 and test["baselines"]["least_squares"]["error_final"] < 1e-6
    assert test["flops_per_sequence"] > 0 and set(test["ood"]) == {
        "scaled_x",
        "noisy_y",
        "skewed_covariance",
        "orthant",
    }
    assert (tmp_path / "in_context_curves.png").is_file()
    loaded = AutoModelForInContextRegression.from_pretrained(tmp_path / "model")
    assert loaded.config.input_dim == 4 and loaded.config.output_dim == 1


def test_sparse_parity_and_vector_mqar_train_with_their_objectives(tmp_path):
    parity = main(
        [*RUN, "--task", "sparse_parity", "--architecture", "mamba", "--max-steps", "3", "--batch-size", "8",
         "--task-option", "n_points=12", "--task-option", "n_test=16", "--output-dir", str(tmp_path / "parity")]
    )  # fmt: skip
    assert 0 <= parity["test"]["model"]["accuracy_mean"] <= 1 and "gf2_parity" in parity["test"]["baselines"]
    assert parity["train"]["history"][0]["loss"] == pytest.approx(0.69, abs=0.1)  # BCE at chance
    mqar = main(
        [*RUN, "--task", "vector_mqar", "--max-steps", "3", "--batch-size", "8", "--n-train", "16",
         "--task-option", "n_queries=4", "--task-option", "n_pairs=6", "--task-option", "n_dims=8",
         "--task-option", "n_test=16", "--output-dir", str(tmp_path / "mqar")]
    )  # fmt: skip
    assert mqar["task_facts"]["n_train"] == 16 and mqar["test"]["baselines"]["nearest_key"]["error_mean"] == 0
    assert mqar["test"]["task_facts"]["tokens_per_sequence"] == 2 * 6 + 4
