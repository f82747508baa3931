"""RWKV-7's value residual as a block feature (`block_features/value_residual.py`): the gate's algebra by hand, the
weights it adds, recurrent decoding ≡ the parallel form with left padding, maps @ values ≡ output (also on a cached
continuation), save/load and the remote-code round trip without hf_icl, and the one-line refusal elsewhere."""

import json

import pytest
import torch
from test_models import assert_remote_code_matches, step_by_step_logits
from transformers import AutoModelForCausalLM

import hf_icl
from hf_icl.block_features.value_residual import CONTEXT_KEY, ValueResidualGate


def model_with(value_residual: bool, layers: int = 3, seed: int = 0):
    config = hf_icl.config_for("rwkv7", "tiny", vocab_size=20, num_hidden_layers=layers, value_residual=value_residual)
    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(config).eval()


def padded_batch():
    gen = torch.Generator().manual_seed(1)
    input_ids = torch.randint(1, 20, (2, 14), generator=gen)
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, :4] = 0  # left padding
    return input_ids.masked_fill(attention_mask == 0, 0), attention_mask


def test_the_gate_is_a_lerp_toward_the_first_layers_values():
    first, later = ValueResidualGate(4, 2, 0), ValueResidualGate(4, 2, 1)
    later.reset_mixer_parameters()
    store = {}
    v0, v1, x = torch.randn(1, 3, 4), torch.randn(1, 3, 4), torch.randn(1, 3, 4)
    assert first(v0, x, {CONTEXT_KEY: store}) is v0 and list(store) == [(1, 3, 4)]
    gate = torch.sigmoid(later.up(later.down(x)))
    torch.testing.assert_close(later(v1, x, {CONTEXT_KEY: store}), v1 + (v0 - v1) * gate)
    torch.testing.assert_close(later.up.bias, 0.73 - 0.4 * (torch.arange(4) / 3 - 0.5))  # fla's v0 initialisation
    with torch.no_grad():
        later.up.bias.fill_(50.0)  # a gate at 1: the first layer's values themselves
    torch.testing.assert_close(later(v1, x, {CONTEXT_KEY: store}), v0)
    with pytest.raises(ValueError, match="no first-layer values of shape"):
        later(torch.randn(1, 5, 4), torch.randn(1, 5, 4), {CONTEXT_KEY: store})


def test_it_adds_a_gate_to_every_layer_after_the_first_and_changes_the_output():
    plain, residual = model_with(False), model_with(True)
    added = {k: v.numel() for k, v in residual.state_dict().items() if "value_transform" in k}
    width, rank = 64, 32
    assert sorted(added) == [f"model.layers.{i}.mixer.value_transform.{p}" for i in (1, 2)
                             for p in ("down.weight", "up.bias", "up.weight")]  # fmt: skip
    assert sum(added.values()) == 2 * (2 * width * rank + width)
    residual.load_state_dict(plain.state_dict(), strict=False)  # same weights, plus the gates
    input_ids, attention_mask = padded_batch()
    with torch.no_grad():
        assert not torch.allclose(residual(input_ids).logits, plain(input_ids).logits)
        out = residual(input_ids, labels=input_ids)
    assert torch.isfinite(out.loss)


def test_cached_decoding_equals_the_parallel_form_with_left_padding():
    model = model_with(True)
    input_ids, attention_mask = padded_batch()
    with torch.no_grad():
        full = model(input_ids, attention_mask=attention_mask).logits
        for prefill in (1, 6):
            stepped = step_by_step_logits(model, input_ids, attention_mask, prefill)
            real = attention_mask.bool()
            torch.testing.assert_close(stepped[real], full[real], atol=2e-5, rtol=1e-4)


def test_maps_times_values_equal_the_output_also_on_a_cached_continuation():
    model = model_with(True)
    first, later = model.model.layers[0].mixer, model.model.layers[1].mixer
    hidden = torch.randn(2, 11, 64, generator=torch.Generator().manual_seed(2))
    mask = torch.arange(11)[None] >= torch.tensor([[0], [3]])  # row 1 left-padded
    context = {CONTEXT_KEY: {}}
    with torch.no_grad():
        first.mixing_map(hidden, mask, context)  # the first layer records its values for this shape
        mixing = later.mixing_map(hidden, mask, context)
        plain = later.mixing_map(hidden, mask, {CONTEXT_KEY: {(2, 11, 64): torch.zeros(2, 11, 64)}})
    maps, values, output = mixing.maps, mixing.values, mixing.output * mask[:, None, :, None]
    torch.testing.assert_close(maps.double() @ values.double() * mask[:, None, :, None], output.double(),
                               atol=1e-5 * (output.abs().max().item() + 1), rtol=1e-5)  # fmt: skip
    assert not torch.allclose(values, plain.values)  # the map's values are the mixed ones, first layer's included
    input_ids, _ = padded_batch()
    with torch.no_grad():  # through the model: a cached continuation reports the rows of the full forward's maps
        full = model(input_ids, output_attentions=True).attentions
        cached = model(input_ids[:, :8], output_attentions=True, use_cache=True)
        continued = model(input_ids[:, 8:], output_attentions=True, cache=cached.cache, use_cache=True)
    for whole, head, tail in zip(full, cached.attentions, continued.attentions):
        torch.testing.assert_close(head, whole[:, :, :8, :8], atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(tail, whole[:, :, 8:, :], atol=1e-5, rtol=1e-4)


def test_save_load_and_remote_code_round_trip(tmp_path):
    model = model_with(True)
    model.save_pretrained(tmp_path / "ckpt")
    config = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    assert config["value_residual"] is True and config["value_residual_rank"] == 32
    assert (tmp_path / "ckpt" / "value_residual.py").is_file()
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path / "ckpt").eval()
    input_ids, attention_mask = padded_batch()
    with torch.no_grad():
        expected = model(input_ids, attention_mask=attention_mask).logits
        torch.testing.assert_close(loaded(input_ids, attention_mask=attention_mask).logits, expected, atol=0, rtol=0)
    assert_remote_code_matches(model, tmp_path / "ckpt", input_ids, attention_mask)


def test_a_plain_rwkv7_checkpoint_ships_no_value_residual_code(tmp_path):
    model_with(False).save_pretrained(tmp_path / "ckpt")
    assert not (tmp_path / "ckpt" / "value_residual.py").exists()


def test_mixers_that_do_not_hand_over_values_are_refused_in_one_line():
    with pytest.raises(ValueError) as err:
        hf_icl.config_for("transformer", "tiny", value_residual=True)
    message = str(err.value)
    assert "\n" not in message and message.startswith("value_residual=True is not supported by icl_transformer")
    assert "needs mixers that hand over their values" in message and "allowed: False" in message
    assert message.endswith("Architectures that accept value_residual: rwkv7")
