"""Oracles of the slow/fast Transformer (P3; DESIGN §5.7): folding, stream independence, regularisers against hand
values and torch.distributions, the truncated batch's mask, cached decoding with slow features, and the Hub route of
the specialised model."""

import json
import subprocess
import sys
import textwrap

import pytest
import torch
from transformers import AutoModelForCausalLM

import hf_icl
from hf_icl.architectures.transformer import ICLTransformerForCausalLM
from hf_icl.block_features.slowfast.slow_features import (
    gp_kl,
    gp_prior_covariance,
    moving_average,
    shift,
    slow_change,
    slow_orthogonality,
    slow_statistics,
    smooth,
    truncated_batch,
)

INPUT_IDS = torch.tensor([[3, 5, 7, 19, 2, 4, 9, 1, 6, 8, 11], [1, 2, 3, 4, 19, 5, 6, 7, 8, 10, 12]])


def slowfast(seed=0, **overrides):
    """A tiny slow/fast model with every weight moved off its initial value (generators included)."""
    torch.manual_seed(seed)
    config = hf_icl.config_for("slowfast_transformer", "tiny", vocab_size=20, **overrides)
    model = AutoModelForCausalLM.from_config(config).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.1 * torch.randn_like(parameter))
    return model


@pytest.mark.parametrize("activation", ["tanh", "softmax"])
@pytest.mark.parametrize("slow_layer", [0, 1])
def test_specialize_folds_the_frozen_y_into_a_plain_transformer(activation, slow_layer):
    model = slowfast(generator_activation=activation, slow_layer=slow_layer)
    y = torch.randn(model.config.slow_dim)
    specialised = model.specialize(y)
    assert type(specialised) is ICLTransformerForCausalLM
    assert specialised.config.hidden_size == model.config.hidden_size == 60
    assert not any("slow" in name or "modulation" in name for name, _ in specialised.named_parameters())
    with torch.no_grad():
        frozen = model(INPUT_IDS, slow_features=y).logits
        torch.testing.assert_close(specialised(INPUT_IDS).logits, frozen, atol=1e-4, rtol=0)
        assert not torch.allclose(frozen, model(INPUT_IDS).logits, atol=1e-3)  # y matters
    with pytest.raises(ValueError, match="one y"):
        model.specialize(torch.randn(2, model.config.slow_dim))


def test_slow_features_shapes_agree():
    model = slowfast()
    y = torch.randn(model.config.slow_dim)
    with torch.no_grad():
        one = model(INPUT_IDS, slow_features=y).logits
        per_row = model(INPUT_IDS, slow_features=y.expand(2, -1)).logits
        per_position = model(INPUT_IDS, slow_features=y.expand(2, INPUT_IDS.shape[1], -1)).logits
    torch.testing.assert_close(one, per_row, atol=1e-6, rtol=0)
    torch.testing.assert_close(one, per_position, atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match=r"slow_features has shape \(5,\)"):
        model(INPUT_IDS, slow_features=torch.randn(5))


def test_the_fast_stream_before_slow_layer_ignores_the_slow_stream():
    model = slowfast(num_hidden_layers=3, slow_layer=2)
    with torch.no_grad():
        before = model(INPUT_IDS, output_hidden_states=True).hidden_states
        for name, parameter in model.named_parameters():
            if "slow" in name:
                parameter.add_(torch.randn_like(parameter))
        after = model(INPUT_IDS, output_hidden_states=True).hidden_states
    for layer in range(3):  # the embedding and x after blocks 0 and 1: x^{<ℓ} and x^ℓ
        torch.testing.assert_close(after[layer], before[layer], atol=0, rtol=0)
    assert not torch.allclose(after[3], before[3])  # block ℓ reads y^ℓ through T


def test_modulation_starts_as_the_identity():
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(hf_icl.config_for("slowfast_transformer", "tiny", vocab_size=20)).eval()
    with torch.no_grad():
        torch.testing.assert_close(
            model(INPUT_IDS).logits, model(INPUT_IDS, slow_features=torch.randn(16)).logits, atol=0, rtol=0
        )


def test_slow_change_and_orthogonality_hand_values():
    y = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [0.0, 2.0]]])  # n = (1,0), (0,1), (0,1): steps 2 and 0
    assert slow_change(y).item() == pytest.approx(1.0)
    assert slow_change(y, torch.tensor([[1, 1, 0]])).item() == pytest.approx(2.0)
    pair = torch.tensor([[[1.0, 0.0]], [[1.0, 1.0]]])  # B = 2, T = 1: n·n' = 1/√2, so 2 · 1/2 off the diagonal
    assert slow_orthogonality(pair).item() == pytest.approx(0.25)
    assert slow_orthogonality(torch.tensor([[[1.0, 0.0]], [[0.0, 3.0]]])).item() == pytest.approx(0.0)
    # R'_D with d = 1: batch mean 2 (‖⟨y⟩‖² = 4), variance 1 (no penalty); then mean 1, variance 4: 1 + 9
    assert slow_statistics(torch.tensor([[[1.0]], [[3.0]]])).item() == pytest.approx(4.0)
    assert slow_statistics(torch.tensor([[[-1.0]], [[3.0]]])).item() == pytest.approx(10.0)


def test_gp_kl_equals_torch_distributions():
    torch.manual_seed(0)
    mean, log_variance = torch.randn(2, 6, 3, dtype=torch.float64), torch.randn(2, 6, 3, dtype=torch.float64)
    prior_cov = gp_prior_covariance(6, 0.1, 0.3, 1.5, dtype=torch.float64)
    prior = torch.distributions.MultivariateNormal(torch.zeros(6, dtype=torch.float64), prior_cov)
    expected = (
        torch.stack(
            [
                torch.distributions.kl_divergence(
                    torch.distributions.MultivariateNormal(mean[b, :, c], torch.diag(log_variance[b, :, c].exp())),
                    prior,
                )
                for b in range(2)
                for c in range(3)
            ]
        ).mean()
        / 6
    )
    assert gp_kl(mean, log_variance, 0.1, 0.3, 1.5).item() == pytest.approx(expected.item(), rel=1e-9)
    # the kernel itself: K²(ν δ + (1 − ν) exp(−(i − j)² / 2σ²)) with σ = 0.3 · 6
    assert prior_cov[0, 1].item() == pytest.approx(1.5**2 * 0.9 * torch.exp(torch.tensor(-1 / (2 * 1.8**2))).item())
    assert prior_cov[2, 2].item() == pytest.approx(1.5**2)


def test_truncated_batch_masks_exactly_the_positions_after_l_trunc_plus_l_delta():
    ids = torch.arange(10).repeat(2, 1) + 100  # (2, 10)
    labels = ids.clone()
    labels[1, 7] = -100  # an unscored position stays unscored
    slow = (
        torch.arange(10, dtype=torch.float32)[None, :, None].repeat(2, 1, 1) * torch.tensor([1.0, -1.0])[:, None, None]
    )
    starts = torch.tensor([0, 3])
    new_ids, new_labels, held = truncated_batch(ids, labels, slow, starts, context=2, hold="none", pad_token_id=0)
    assert new_ids.tolist() == [list(range(100, 110)), [103, 104, 105, 106, 107, 108, 109, 0, 0, 0]]
    assert new_labels.tolist() == [
        [-100, -100, 102, 103, 104, 105, 106, 107, 108, 109],
        [-100, -100, 105, 106, -100, 108, 109, -100, -100, -100],
    ]
    assert held[:, :, 0].tolist() == [list(range(10)), [-3.0, -4.0, -5.0, -6.0, -7.0, -8.0, -9.0, -9.0, -9.0, -9.0]]
    _, _, held = truncated_batch(ids, labels, slow, starts, context=2, hold="truncation")
    assert held[:, :, 0].tolist() == [[0.0] * 10, [-3.0] * 10]
    _, _, held = truncated_batch(ids, labels, slow, starts, context=2, hold="context")
    assert held[1, :, 0].tolist() == [-3.0, -4.0] + [-4.0] * 8
    new_ids, new_labels, _ = truncated_batch(ids, labels, slow, starts, context=2, window=3)
    assert new_ids.tolist() == [[100, 101, 102, 103, 104], [103, 104, 105, 106, 107]]
    assert new_labels[1].tolist() == [-100, -100, 105, 106, -100]


def test_augmentations_and_moving_average():
    y = torch.tensor([[[1.0], [3.0], [5.0], [7.0]]])
    assert smooth(y, torch.tensor([2]))[0, :, 0].tolist() == [1.0, 2.0, 4.0, 6.0]
    assert shift(y, torch.tensor([1]))[0, :, 0].tolist() == [1.0, 1.0, 3.0, 5.0]
    initial, rate, state, expected = torch.tensor([[10.0]]), 0.25, 10.0, []
    for value in [1.0, 3.0, 5.0, 7.0]:
        state = (1 - rate) * state + rate * value
        expected.append(state)
    assert moving_average(y, initial, rate)[0, :, 0].tolist() == pytest.approx(expected)


def test_training_reports_the_named_auxiliary_losses():
    model = slowfast(truncated_context=3).train()
    out = model(INPUT_IDS, labels=INPUT_IDS)
    assert set(out.aux_losses) == {"slow_change", "slow_diversity", "truncated_lm"}
    assert all(torch.isfinite(value) and value.requires_grad for value in out.aux_losses.values())
    config = model.config
    y = model.model.compute_slow_features(INPUT_IDS)
    assert model.training  # compute_slow_features evaluates, then restores the mode
    assert y.shape == (2, INPUT_IDS.shape[1], config.slow_dim)
    vae = slowfast(slow_regularizer="vae", truncated_loss_weight=0.0).train()
    assert set(vae(INPUT_IDS, labels=INPUT_IDS).aux_losses) == {"slow_kl"}
    statistics = slowfast(slow_diversity="statistics", slow_augment="both", slow_smoothing=3, slow_shift=2).train()
    out = statistics(INPUT_IDS, labels=INPUT_IDS)
    assert out.aux_losses["slow_diversity"].item() > 0
    out.loss.backward()  # the generators receive gradients through the main pass
    assert statistics.model.layers[1].mixer_modulation.left.grad is not None


def step_logits(model, input_ids, **kwargs):
    out = model(input_ids[:, :3], use_cache=True, **kwargs)
    cache, logits = out.cache, [out.logits]
    for t in range(3, input_ids.shape[1]):
        out = model(input_ids[:, t : t + 1], cache=cache, use_cache=True, **kwargs)
        cache, logits = out.cache, logits + [out.logits]
    return torch.cat(logits, dim=1)


@pytest.mark.parametrize("mode", ["computed", "vector", "per_row", "informed"])
def test_cached_decode_equals_full_forward_with_slow_features(mode):
    model = slowfast()
    y = torch.randn(model.config.slow_dim)
    kwargs = {
        "computed": {},
        "vector": {"slow_features": y},
        "per_row": {"slow_features": torch.stack([y, -y])},
        "informed": {"slow_features": y, "slow_update_rate": 0.3},
    }[mode]
    with torch.no_grad():
        full = model(INPUT_IDS, **kwargs).logits
        torch.testing.assert_close(step_logits(model, INPUT_IDS, **kwargs), full, atol=1e-4, rtol=0)
    greedy = dict(max_new_tokens=5, do_sample=False, pad_token_id=0, eos_token_id=None, **kwargs)
    assert torch.equal(model.generate(INPUT_IDS, **greedy), model.generate(INPUT_IDS, use_cache=False, **greedy))
    if mode == "per_row":  # a (B, d_y) y is expanded with the batch for beams
        beams = model.generate(INPUT_IDS, num_beams=2, num_return_sequences=2, **greedy)
        assert beams.shape == (4, INPUT_IDS.shape[1] + 5)


REMOTE = textwrap.dedent(
    """
    import json, sys
    sys.modules["hf_icl"] = None
    import torch
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(sys.argv[1], trust_remote_code=True).eval()
    with torch.no_grad():
        print(json.dumps(model(torch.tensor(json.loads(sys.argv[2]))).logits.tolist()))
    """
)


def test_specialised_model_round_trips_through_the_hub_route(tmp_path):
    model = slowfast()
    y = torch.randn(model.config.slow_dim)
    specialised = model.specialize(y)
    specialised.save_pretrained(tmp_path / "specialised")
    config = json.loads((tmp_path / "specialised" / "config.json").read_text())
    assert config["model_type"] == "icl_transformer" and "slowfast" not in json.dumps(config["auto_map"])
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path / "specialised").eval()
    with torch.no_grad():
        expected = model(INPUT_IDS, slow_features=y).logits
        torch.testing.assert_close(loaded(INPUT_IDS).logits, specialised(INPUT_IDS).logits, atol=0, rtol=0)
    result = subprocess.run(
        [sys.executable, "-c", REMOTE, str(tmp_path / "specialised"), json.dumps(INPUT_IDS.tolist())],
        capture_output=True,
        text=True,
        env={"HF_MODULES_CACHE": str(tmp_path / "modules"), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"},
        cwd=tmp_path,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    torch.testing.assert_close(
        torch.tensor(json.loads(result.stdout.strip().splitlines()[-1])), expected, atol=1e-4, rtol=0
    )


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(slow_layer=2), r"slow_layer=2 must be in \[0, 1\]"),
        (dict(generator_activation="relu"), "generator_activation='relu' is not one of: tanh, softmax"),
        (dict(slow_dim=10, slow_heads=3), "slow_dim=10 must be divisible by slow_heads=3"),
        (dict(truncated_hold="always"), "truncated_hold='always' is not one of"),
        (dict(slow_regularizer="l2"), "slow_regularizer='l2' is not one of: elementwise, vae, none"),
        (dict(gp_noise=1.5), r"gp_noise=1.5 must be in \[0, 1\]"),
    ],
)
def test_config_errors_name_the_field(overrides, message):
    with pytest.raises(ValueError, match=message):
        hf_icl.config_for("slowfast_transformer", "tiny", **overrides)


def test_the_analysis_rebuilds_the_checkpoints_task_layout():
    """`python -m hf_icl.analysis slowfast` scores the rows of the task the checkpoint trained on (its digits)."""
    from types import SimpleNamespace

    from hf_icl.analysis.slowfast import task_config
    from hf_icl.tasks.icl_arithmetic import check_row

    model = SimpleNamespace(config=SimpleNamespace(hf_icl_run={"task_options": {"digits": 1, "n_test": 500}}))
    config, rows = task_config(model, n_rows=3)
    assert config.digits == 1 and len(rows) == 3
    assert all(check_row(row, digits=1) for row in rows)
    assert len(rows[0]["text"]) == config.sequence_length
