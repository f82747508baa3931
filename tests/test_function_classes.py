"""The in-context regression suite's data (P5 §3.2; DESIGN §5.5): every sampler against its definition in a
hand-checked case, determinism, the exact baselines (least squares, GF(2) elimination) against their closed forms
and brute force, the evaluator's metrics on literal cases, the FLOP formulas, and the exported prompt sets."""

import itertools
import math

import numpy as np
import pytest
import torch

import hf_icl
from hf_icl.baselines import regression as baselines
from hf_icl.evaluation.flops import forward_flops
from hf_icl.tasks.function_classes import (
    FUNCTION_CLASSES,
    FunctionClassBuilder,
    model_inputs,
    prompts_from_rows,
    sample,
)
from hf_icl.tasks.function_classes.evaluation import curve, example_scores, summary

TASKS = sorted(FUNCTION_CLASSES)


def test_task_names_are_registered():
    assert set(TASKS) <= set(hf_icl.list_tasks())
    assert set(TASKS) == {
        "linear_regression", "noisy_linear_regression", "sparse_linear_regression", "relu_2nn_regression",
        "decision_tree", "orthogonal_outlier_regression", "many_outlier_regression", "sparse_parity", "cot_io",
        "vector_mqar",
    }  # fmt: skip


@pytest.mark.parametrize("task", TASKS)
def test_sampler_is_deterministic_in_the_seed_and_has_the_documented_shapes(task):
    spec = FUNCTION_CLASSES[task]
    first, again = (sample(task, 3, spec.n_points, spec.n_dims, seed=5) for _ in range(2))
    other = sample(task, 3, spec.n_points, spec.n_dims, seed=6)
    assert first["xs"].shape == (3, spec.n_points, spec.n_dims) and first["xs"].dtype == torch.float32
    assert first["ys"].shape[:2] == (3, spec.n_points)
    for key, value in first.items():
        if torch.is_tensor(value):
            assert torch.equal(value, again[key]), key
    assert not torch.equal(first["xs"], other["xs"])


def test_linear_noisy_and_sparse_definitions():
    drawn = sample("linear_regression", 4, 7, 3, seed=0)
    torch.testing.assert_close(drawn["ys"], torch.einsum("bnd,bd->bn", drawn["xs"], torch.tensor(drawn["w"]).float()))
    noisy = sample("noisy_linear_regression", 2000, 2, 3, seed=0, noise_std=0.5)
    residual = noisy["ys"] - torch.einsum("bnd,bd->bn", noisy["xs"], torch.tensor(noisy["w"]).float())
    assert abs(float(residual.std()) - 0.5) < 0.03
    sparse = sample("sparse_linear_regression", 50, 4, 20, seed=0)
    assert ((sparse["w"] != 0).sum(1) == 3).all()


def test_relu_2nn_definition():
    drawn = sample("relu_2nn_regression", 2, 5, 4, seed=1, hidden_size=6)
    w1, w2, xs = drawn["w1"], drawn["w2"], drawn["xs"].double().numpy()
    b, n = 1, 3  # one example by hand: y = √(2/h) Σ_j w2_j relu(W1_j · x)
    expected = math.sqrt(2 / 6) * sum(w2[b, j] * max(0.0, float(w1[b, j] @ xs[b, n])) for j in range(6))
    assert drawn["ys"][b, n].item() == pytest.approx(expected, rel=1e-5)


def test_decision_tree_definition():
    drawn = sample("decision_tree", 3, 20, 5, seed=2, depth=4)
    coordinates, values, xs = drawn["tree_coordinates"], drawn["tree_values"], drawn["xs"].numpy()
    for b, n in itertools.product(range(3), range(20)):
        node = 0
        for _ in range(4):  # go right iff x[i] > 0 at the node's coordinate i
            node = 2 * node + (2 if xs[b, n, coordinates[b, node]] > 0 else 1)
        assert node >= 15  # a leaf of the depth-4 tree (nodes 15..30)
        assert drawn["ys"][b, n].item() == pytest.approx(values[b, node], rel=1e-6)


def test_orthogonal_outliers_follow_the_paper():
    drawn = sample("orthogonal_outlier_regression", 400, 30, 6, seed=3)
    w, clean = torch.tensor(drawn["w"]).float(), drawn["loss_mask"]
    assert abs(float((~clean).float().mean()) - 0.5) < 0.02
    torch.testing.assert_close(
        drawn["ys"][clean], torch.einsum("bnd,bd->bn", drawn["xs"], w)[clean], rtol=1e-4, atol=1e-4
    )
    for tokens in (drawn["xs"], drawn["y_tokens"]):  # outlier x and y slots lie in w⊥ (the prompt's own w)
        cosine = torch.einsum("bnd,bd->bn", tokens, w) / (tokens.norm(dim=-1) * w.norm(dim=-1)[:, None])
        assert cosine[~clean].abs().max() < 1e-4
    assert torch.equal(drawn["y_tokens"][clean][:, 1:], torch.zeros_like(drawn["y_tokens"][clean][:, 1:]))
    assert torch.equal(drawn["y_tokens"][clean][:, 0], drawn["ys"][clean])


def test_many_outliers_are_ones_and_one():
    drawn = sample("many_outlier_regression", 200, 50, 4, seed=4)
    outlier = ~drawn["loss_mask"]
    assert abs(float(outlier.float().mean()) - 0.9) < 0.02
    assert torch.equal(drawn["xs"][outlier], torch.ones(int(outlier.sum()), 4))
    assert torch.equal(drawn["ys"][outlier], torch.ones(int(outlier.sum())))


def test_sparse_parity_definition_and_shared_subset():
    drawn = sample("sparse_parity", 5, 8, 10, seed=5, k=2)
    subset = drawn["subset"]
    assert (subset == subset[0]).all()  # one subset per batch, as the reference draws it
    assert set(drawn["xs"].unique().tolist()) == {-1.0, 1.0}
    torch.testing.assert_close(drawn["ys"], drawn["xs"][:, :, subset[0, 0]] * drawn["xs"][:, :, subset[0, 1]])
    per_prompt = sample("sparse_parity", 50, 8, 10, seed=5, k=2, shared_subset=False)["subset"]
    assert len({tuple(s) for s in per_prompt}) > 1


def test_sparse_parity_prompt_sets_draw_a_subset_per_prompt_unless_told():
    """Training shares S within a step (the reference); the evaluation splits draw S per prompt, so a 1,280-prompt
    test set is not 5 functions. An explicit `shared_subset` wins."""
    from hf_icl.tasks.function_classes.function_class_data import FunctionClassConfig, iter_rows

    def consistent_pairs(row):  # every pair S whose parity gives the prompt's ys
        xs, ys = np.asarray(row["xs"]), np.asarray(row["ys"])
        return {pair for pair in itertools.combinations(range(6), 2) if (xs[:, pair[0]] * xs[:, pair[1]] == ys).all()}

    def rows(**options):
        config = FunctionClassConfig(name="p", task="sparse_parity", n_dims=6, n_points=24, n_test=64, **options)
        return list(iter_rows(config, "test"))

    per_prompt = [consistent_pairs(row) for row in rows()]
    assert all(per_prompt) and len(set().union(*per_prompt)) > 5
    shared = [consistent_pairs(row) for row in rows(shared_subset=True)]
    assert set.intersection(*shared)  # one S explains every prompt of the block


def test_cot_io_definition():
    drawn = sample("cot_io", 2, 4, 10, seed=6, hidden_size=8)
    ss = np.maximum(np.einsum("bkd,bnd->bnk", drawn["w"], drawn["xs"].double().numpy()), 0)
    np.testing.assert_allclose(drawn["ss"].numpy(), ss, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(drawn["ys"].numpy(), np.einsum("bnk,bk->bn", ss, drawn["v"]), rtol=1e-5, atol=1e-5)


def test_vector_mqar_is_the_papers_version():
    drawn = sample("vector_mqar", 3, 36, 20, seed=7, n_pairs=32, n_queries=4)
    xs, ys = drawn["xs"], drawn["ys"]
    torch.testing.assert_close(xs.norm(dim=-1), torch.ones(3, 36))  # unit sphere, not √d
    torch.testing.assert_close(ys.norm(dim=-1), torch.ones(3, 36))
    for b in range(3):
        assert len(set(drawn["queried"][b].tolist())) == 4  # distinct keys
        for j, key in enumerate(drawn["queried"][b]):  # every query copies a key, the target is that key's value
            assert torch.equal(xs[b, 32 + j], xs[b, key]) and torch.equal(ys[b, 32 + j], ys[b, key])
    assert drawn["loss_mask"].sum(1).tolist() == [4, 4, 4]
    batch = model_inputs(drawn)
    assert batch["ys"].shape == (3, 32, 20) and batch["targets"].shape == (3, 36, 20)


def test_input_dim_pads_and_out_of_distribution_options():
    drawn = sample("linear_regression", 2, 3, 4, seed=0, input_dim=7)
    assert drawn["xs"].shape == (2, 3, 7) and torch.equal(drawn["xs"][..., 4:], torch.zeros(2, 3, 3))
    orthant = sample("linear_regression", 4, 50, 5, seed=0, orthant=True)["xs"]
    assert (torch.sign(orthant) == torch.sign(orthant[:, :1])).all()  # one orthant per prompt
    skewed = sample("linear_regression", 1, 20000, 4, seed=0, covariance="skewed")["xs"][0].double()
    eigenvalues = torch.linalg.eigvalsh(skewed.T @ skewed / 20000).flip(0)
    expected = torch.tensor([1, 1 / 4, 1 / 9, 1 / 16]).double() * 4 / (1 + 1 / 4 + 1 / 9 + 1 / 16)
    torch.testing.assert_close(eigenvalues, expected, rtol=0.05, atol=0.01)
    noisy = sample("linear_regression", 2, 3, 4, seed=0, y_noise=1.0)
    assert not torch.equal(noisy["ys"], noisy["targets"])  # the labels are noisy, the scored targets are not
    with pytest.raises(ValueError, match="no Gaussian x"):
        sample("sparse_parity", 2, 3, 10, seed=0, x_scale=2.0)


# --- baselines ---------------------------------------------------------------------------------------------------


def test_least_squares_error_is_d_minus_i_over_d():
    d = 5
    drawn = sample("linear_regression", 6000, 9, d, seed=0)
    predictions = baselines.least_squares(drawn["xs"], drawn["ys"])
    assert predictions.shape == (6000, 9) and torch.equal(predictions[:, 0], torch.zeros(6000))
    normalised = ((predictions - drawn["ys"]) ** 2).mean(0) / d
    for i in range(d):
        assert normalised[i].item() == pytest.approx((d - i) / d, abs=0.05), i
    assert normalised[d:].max() < 1e-8


def test_least_squares_is_the_minimum_norm_fit():
    rng = np.random.default_rng(0)
    xs, ys = rng.standard_normal((2, 4, 6)), rng.standard_normal((2, 4))
    predictions = baselines.least_squares(xs, ys)
    for b, i in itertools.product(range(2), range(1, 4)):
        w = np.linalg.lstsq(xs[b, :i], ys[b, :i], rcond=None)[0]  # numpy's lstsq is the minimum-norm solution
        assert predictions[b, i].item() == pytest.approx(float(xs[b, i] @ w), rel=1e-5, abs=1e-6)


def test_averaging_and_nearest_neighbours_by_brute_force():
    rng = np.random.default_rng(1)
    xs, ys = rng.standard_normal((2, 6, 3)), rng.standard_normal((2, 6))
    average, nearest = baselines.averaging(xs, ys), baselines.nearest_neighbors(xs, ys, k=3)
    for b, i in itertools.product(range(2), range(1, 6)):
        w = (ys[b, :i, None] * xs[b, :i]).mean(0)
        assert average[b, i].item() == pytest.approx(float(xs[b, i] @ w), rel=1e-5)
        order = np.argsort(np.linalg.norm(xs[b, :i] - xs[b, i], axis=1))[:3]
        assert nearest[b, i].item() == pytest.approx(float(ys[b, order].mean()), rel=1e-5)


def test_gf2_solver_matches_brute_force_over_all_subsets():
    drawn = sample("sparse_parity", 40, 12, 4, seed=3, k=2, shared_subset=False)
    xs, ys = drawn["xs"].numpy(), drawn["ys"].numpy()
    predictions = baselines.gf2_parity(xs, ys)
    subsets = [s for r in range(5) for s in itertools.combinations(range(4), r)]  # every parity on 4 bits
    for b, i in itertools.product(range(40), range(12)):
        consistent = [s for s in subsets if all(np.prod(xs[b, j, list(s)]) == ys[b, j] for j in range(i))]
        answers = {float(np.prod(xs[b, i, list(s)])) for s in consistent}
        assert predictions[b, i].item() == (answers.pop() if len(answers) == 1 else 0.0)


def test_gf2_solver_is_exact_after_enough_independent_examples():
    drawn = sample("sparse_parity", 64, 60, 10, seed=4, shared_subset=False)
    predictions = baselines.gf2_parity(drawn["xs"], drawn["ys"])
    determined = predictions != 0
    assert torch.equal(predictions[determined], drawn["ys"][determined])  # never wrong
    assert determined[:, 40:].all()  # 40 random ±1 vectors in GF(2)^10 span it (fails with prob. < 64·2^-30)


def test_sklearn_and_gd_baselines_run_on_a_small_case():
    pytest.importorskip("sklearn")
    drawn = sample("decision_tree", 2, 6, 3, seed=0)
    for name in ("lasso", "decision_tree", "gradient_boosting", "gd_two_layer_nn"):
        kwargs = {"steps": 5} if name == "gd_two_layer_nn" else {}
        predictions = baselines.BASELINES[name](drawn["xs"], drawn["ys"], **kwargs)
        assert predictions.shape == (2, 6) and torch.isfinite(predictions).all(), name


# --- metrics and FLOPs ------------------------------------------------------------------------------------------


def test_scores_and_curves_on_a_hand_computed_case():
    prompts = {"ys": torch.tensor([[1.0, 2.0, 3.0]]), "loss_mask": torch.tensor([[True, False, True]])}
    scores = example_scores("linear_regression", torch.tensor([[0.0, 0.0, 1.0]]), prompts, n_dims=2)
    assert scores.tolist() == [[0.5, 2.0, 2.0]]  # (ŷ − y)² / d
    assert curve(scores, prompts["loss_mask"]) == ([0, 1], [0.5, 2.0])  # against clean examples before
    expected = {"error_mean": 1.25, "error_final": 2.0, "final_examples": 1}
    assert summary("linear_regression", scores, prompts["loss_mask"]) == expected
    # clean counts that vary by prompt: the end of the curve is where 90 % of the prompts still have an example
    varying = torch.tensor([[True, True, True], [True, False, False]])
    scores = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert curve(scores, varying) == ([0, 1, 2], [2.5, 2.0, 3.0])
    assert summary("linear_regression", scores, varying) == {"error_mean": 2.5, "error_final": 2.5, "final_examples": 0}
    parity = example_scores("sparse_parity", torch.tensor([[0.3, -2.0, 0.0]]), {"ys": torch.tensor([[1.0, 1, 1]])}, 10)
    assert parity.tolist() == [[1.0, 0.0, 0.5]]
    vector = example_scores("vector_mqar", torch.zeros(1, 1, 3), {"ys": torch.tensor([[[0.6, 0.8, 0.0]]])}, 3)
    assert vector.item() == pytest.approx(1.0)  # ‖v̂ − v‖²


def test_forward_flops_follow_p5_appendix_c():
    config = hf_icl.config_for("transformer", "tiny", input_dim=4, output_dim=1)
    model = hf_icl.AutoModelForInContextRegression.from_config(config)
    length, d, layers = 10, config.hidden_size, config.num_hidden_layers
    per_block = 3 * length * d * d + 2 * length**2 * d + length * d * d + 8 * length * d * d  # Table 7
    assert forward_flops(model, length) == 2 * (layers * per_block + length * d * (4 + 1))
    config = hf_icl.config_for("mamba", "tiny", input_dim=4, output_dim=1)
    model = hf_icl.AutoModelForInContextRegression.from_config(config)
    e, n, r = config.expand, config.ssm_state_size, config.dt_rank
    per_block = 2 * length * e * d * d + 7 * length * e * d * n + 2 * r * length * e * d + length * e * d * d
    assert forward_flops(model, length) == 2 * (config.num_hidden_layers * per_block + length * d * 5)  # Table 8


# --- fixed prompt sets ------------------------------------------------------------------------------------------


def test_builder_rows_are_the_sampled_prompts(tmp_path):
    builder = FunctionClassBuilder(config_name="sparse_parity", cache_dir=str(tmp_path), n_test=300, n_train=2)
    builder.download_and_prepare()
    test = prompts_from_rows(builder.as_dataset()["test"])
    assert test["xs"].shape == (300, 140, 10) and test["ys"].shape == (300, 140)
    first_block = sample("sparse_parity", 256, 140, 10, (0, _crc("sparse_parity"), 1, 0), shared_subset=False)
    assert torch.equal(test["xs"][:256], first_block["xs"]) and torch.equal(test["ys"][:256], first_block["ys"])
    with pytest.raises(ValueError, match="sparsity do not apply to task 'sparse_parity'"):
        FunctionClassBuilder(config_name="sparse_parity", cache_dir=str(tmp_path), sparsity=3)


def _crc(name):
    import zlib

    return zlib.crc32(name.encode())


def test_export_writes_a_folder_load_dataset_reads(tmp_path):
    import datasets

    from hf_icl.export import main as export_main

    folder = export_main(
        ["function_classes", "--output", str(tmp_path / "suite"), "--configs", "linear_regression",
         "vector_mqar_4_queries", "--n-test", "8", "--n-validation", "4", "--n-train", "4",
         "--cache-dir", str(tmp_path / "cache")]
    )  # fmt: skip
    card = (folder / "README.md").read_text()
    assert "config_name: vector_mqar_4_queries" in card and "unit sphere" in card
    loaded = datasets.load_dataset(str(folder), "vector_mqar_4_queries", split="test")
    prompts = prompts_from_rows(loaded)
    assert prompts["xs"].shape == (8, 36, 20) and prompts["loss_mask"].sum().item() == 32
    builder = FunctionClassBuilder(config_name="linear_regression", cache_dir=str(tmp_path / "c2"), n_test=8)
    builder.download_and_prepare()
    expected = prompts_from_rows(builder.as_dataset()["test"])
    got = prompts_from_rows(datasets.load_dataset(str(folder), "linear_regression", split="test"))
    assert torch.equal(got["xs"], expected["xs"]) and torch.equal(got["ys"], expected["ys"])
