"""Skeleton hooks beyond language modelling: attention maps, block context, auxiliary losses, continuous ends.

Attention maps: every row of a map sums to 1, padding query rows included (a padding query attends to itself
only, so its row is one-hot on the diagonal); entries the mask forbids are exactly 0.
"""

import json

import pytest
import torch
from transformers import AutoConfig, AutoModelForCausalLM

import hf_icl
from hf_icl.architectures.regular_gpt import ICLRegularGPTConfig
from hf_icl.architectures.regular_gpt.modeling_regular_gpt import regular_depth
from hf_icl.mixers import attention as attention_module
from hf_icl.mixers import list_mixers, mixer_spec
from hf_icl.mixers.attention import CausalSelfAttention
from hf_icl.modeling.layers import MLP, DecoderBlock
from hf_icl.modeling.regression import ICLForRegression

ARCHS = hf_icl.list_architectures()
ATTENTION_MIXERS = tuple(mixer_spec(name).mixer_class for name in list_mixers() if mixer_spec(name).attention_maps)
ATTENTION_ARCHS = [
    arch for arch in ARCHS if any(mixer_spec(m).attention_maps for m in hf_icl.config_for(arch, "tiny").mixer_types)
]
SCHEMES = {
    f"transformer-{scheme}": {"position_embedding": scheme} for scheme in ("learned", "rope", "alibi", "nope")
} | {"transformer-hard_alibi": {"position_embedding": "hard_alibi", "num_masked_heads": 1}}
ATTENTION_VARIANTS = {arch: {} for arch in ATTENTION_ARCHS} | SCHEMES


def tiny_lm(name, seed=0, **overrides):
    torch.manual_seed(seed)
    arch = name.partition("-")[0]
    overrides = {**ATTENTION_VARIANTS.get(name, {}), **overrides}
    return AutoModelForCausalLM.from_config(hf_icl.config_for(arch, "tiny", vocab_size=20, **overrides)).eval()


def regression_class(config):
    """The architecture's `ICL<Arch>ForRegression` shell, found by its config class."""
    return next(cls for cls in ICLForRegression.__subclasses__() if cls.config_class is type(config))


def left_padded_batch():
    input_ids = torch.tensor([[0, 0, 0, 3, 5, 7, 19, 2, 4], [1, 2, 3, 4, 19, 5, 6, 7, 8]])
    attention_mask = (torch.arange(9)[None] >= torch.tensor([[3], [0]])).long()
    return input_ids, attention_mask


def block_mixers(model):
    """Mixer of every block application, in order (RegularGPT repeats its K blocks at every depth)."""
    mixers = [layer.mixer for layer in model.model.layers]
    if model.config.model_type == "icl_regular_gpt":
        mixers = mixers * regular_depth(9, model.config.dilated_attention_chunk_size)
    return mixers


# --- attention maps ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(ATTENTION_VARIANTS))
def test_attention_maps_are_distributions_with_exact_zeros_where_masked(name):
    model = tiny_lm(name)
    assert model.config._attn_implementation == "sdpa"
    input_ids, attention_mask = left_padded_batch()
    with torch.no_grad():
        default = model(input_ids, attention_mask=attention_mask)
        out = model(input_ids, attention_mask=attention_mask, output_attentions=True)
    torch.testing.assert_close(out.logits, default.logits, atol=1e-5, rtol=0)
    assert default.attentions is None
    mixers = block_mixers(model)
    assert len(out.attentions) == len(mixers)
    allowed = torch.ones(9, 9).tril().bool()[None, None] & attention_mask.bool()[:, None, None, :]  # (B, 1, T, S)
    allowed = allowed | torch.eye(9, dtype=torch.bool)  # a padding query sees itself only
    for mixer, probs in zip(mixers, out.attentions):
        if not isinstance(mixer, ATTENTION_MIXERS):
            assert probs is None or getattr(mixer, "mixing_maps", False)  # exact linear maps: test_mixing_maps.py
            continue
        assert probs.shape == (2, model.config.num_attention_heads, 9, 9)  # (B, H, T, S)
        rows = probs.sum(-1)  # (B, H, T)
        if getattr(mixer, "zero_missing_keys", False):  # RegularGPT's zero keys keep weight on a zero value
            assert (rows <= 1 + 1e-5).all() and (rows > 0).all()
        else:
            torch.testing.assert_close(rows, torch.ones(2, probs.shape[1], 9), atol=1e-5, rtol=0)
        assert (probs[~allowed.expand_as(probs)] == 0).all()


def test_hard_alibi_heads_see_only_their_window():
    model = tiny_lm("transformer", position_embedding="hard_alibi", num_masked_heads=3, num_attention_heads=4)
    with torch.no_grad():
        out = model(torch.randint(1, 20, (2, 12)), output_attentions=True)
    distance = torch.arange(12)[:, None] - torch.arange(12)[None, :]  # (T, S)
    for probs in out.attentions:
        for head in range(4):
            window = (distance >= 0) & (distance <= head) if head < 3 else distance >= 0  # head h < M: 0..h
            assert (probs[:, head][:, ~window] == 0).all()
            assert (probs[:, head][:, window] > 0).all()


@pytest.mark.parametrize("missing_keys", ["zero", "mask"])
@pytest.mark.parametrize("chunk_size", [2, 3])
def test_regular_gpt_maps_follow_the_dilated_pattern(chunk_size, missing_keys):
    model = tiny_lm("regular_gpt", dilated_attention_chunk_size=chunk_size, dilated_attention_missing_keys=missing_keys)
    length, thickness = 10, model.config.num_hidden_layers
    with torch.no_grad():
        out = model(torch.randint(1, 20, (2, length)), output_attentions=True)
    assert len(out.attentions) == regular_depth(length, chunk_size) * thickness
    distance = torch.arange(length)[:, None] - torch.arange(length)[None, :]  # (T, S)
    for application, probs in enumerate(out.attentions):
        stride = chunk_size ** (application // thickness)  # C^l
        offsets = (distance >= 0) & (distance % stride == 0) & (distance // stride < chunk_size)
        assert torch.equal(probs > 0, offsets.expand_as(probs))  # nonzero exactly at {0, C^l, ..., (C−1)C^l}
        complete = torch.arange(length) >= (chunk_size - 1) * stride  # queries whose C keys all exist
        rows = probs.sum(-1)  # (B, H, T)
        torch.testing.assert_close(rows[..., complete], torch.ones_like(rows[..., complete]), atol=1e-5, rtol=0)
        if missing_keys == "mask":  # the missing keys' weight goes to the keys that exist
            torch.testing.assert_close(rows, torch.ones_like(rows), atol=1e-5, rtol=0)
        else:  # the missing keys keep their weight, on a zero value, so a row sums to less than 1
            assert (rows[..., ~complete] < 1 - 1e-4).all()


@pytest.mark.parametrize("arch", [arch for arch in ARCHS if arch not in ATTENTION_ARCHS] + ["gla-ngram"])
def test_layers_without_attention_report_none_or_their_exact_map(arch):
    ngram = {"ngram_heads": [{"layer": 0, "orders": [1, 2]}]} if arch.endswith("ngram") else {}
    model = tiny_lm(arch, **ngram)
    with torch.no_grad():
        out = model(torch.randint(1, 20, (1, 6)), output_attentions=True)
    assert len(out.attentions) == len(model.model.layers)
    for layer, maps in zip(model.model.layers, out.attentions):
        if getattr(layer.mixer, "mixing_maps", False):  # linear in its values: the exact map (test_mixing_maps.py)
            assert maps.shape[0] == 1 and maps.shape[2:] == (6, 6)
        else:  # LSTM, n-gram blocks
            assert maps is None


def test_eager_path_only_when_maps_are_asked_for(monkeypatch):
    calls = []
    eager = attention_module.eager_attention_forward
    monkeypatch.setattr(attention_module, "eager_attention_forward", lambda *a, **k: calls.append(1) or eager(*a, **k))
    model = tiny_lm("transformer")
    with torch.no_grad():
        model(torch.randint(1, 20, (1, 6)))
        assert not calls
        model(torch.randint(1, 20, (1, 6)), output_attentions=True)
    assert len(calls) == model.config.num_hidden_layers


def test_generate_returns_attention_maps():
    model = tiny_lm("transformer")
    input_ids, attention_mask = left_padded_batch()
    kwargs = dict(attention_mask=attention_mask, max_new_tokens=3, do_sample=False, pad_token_id=0, eos_token_id=None)
    out = model.generate(input_ids, output_attentions=True, return_dict_in_generate=True, **kwargs)
    assert torch.equal(out.sequences, model.generate(input_ids, **kwargs))
    assert [tuple(step[0].shape) for step in out.attentions] == [(2, 2, 9, 9), (2, 2, 1, 10), (2, 2, 1, 11)]


# --- block context and auxiliary losses -------------------------------------------------------------------------


class ContextMLP(MLP):
    """An FFN that records the block context it receives."""

    def forward(self, x, **context):
        self.seen = context
        return super().forward(x, **context)


class ContextAttention(CausalSelfAttention):
    """A mixer that records its context and reports an auxiliary loss, as a load-balancing mixer would."""

    def forward(self, hidden_states, **kwargs):
        self.seen = kwargs
        kwargs["recorder"].add_aux_loss("activation", hidden_states.pow(2).mean())
        return super().forward(hidden_states, **kwargs)


def with_context_modules(model):
    for layer in model.model.layers:
        mixer, ffn = layer.mixer, layer.ffn
        layer.mixer = ContextAttention(model.config, mixer.layer_idx)
        layer.mixer.load_state_dict(mixer.state_dict())
        layer.ffn = ContextMLP(model.config)
        layer.ffn.load_state_dict(ffn.state_dict())
    return model


def test_block_context_reaches_every_mixer_and_ffn():
    model = with_context_modules(tiny_lm("transformer"))
    style = torch.randn(2, 4)
    with torch.no_grad():
        model(torch.randint(1, 20, (2, 6)), block_context={"style": style})
    for layer in model.model.layers:
        assert layer.mixer.seen["style"] is style and layer.ffn.seen["style"] is style
        assert layer.mixer.seen["recorder"] is layer.ffn.seen["recorder"]
    with pytest.raises(ValueError, match="block_context may not set 'recorder'"):
        model(torch.randint(1, 20, (2, 6)), block_context={"recorder": None})


@pytest.mark.parametrize("arch", [*ARCHS, "gla-ngram"])
def test_every_mixer_ignores_unknown_context(arch):
    ngram = {"ngram_heads": [{"layer": 0, "orders": [1, 2]}]} if arch.endswith("ngram") else {}
    model = tiny_lm(arch, **ngram)
    input_ids, attention_mask = left_padded_batch()
    with torch.no_grad():
        plain = model(input_ids, attention_mask=attention_mask).logits
        extra = model(input_ids, attention_mask=attention_mask, block_context={"style": torch.ones(2, 3)}).logits
    assert torch.equal(plain, extra)


def test_aux_losses_are_reported_and_lm_loss_stays_cross_entropy():
    model = tiny_lm("transformer")
    input_ids = torch.randint(1, 20, (2, 6))
    plain = model(input_ids, labels=input_ids)
    assert plain.aux_losses == {}
    model = with_context_modules(model)
    out = model(input_ids, labels=input_ids)
    assert set(out.aux_losses) == {"activation"} and out.aux_losses["activation"].requires_grad
    torch.testing.assert_close(out.loss, plain.loss)  # the same weights: cross-entropy only, no aux term
    expected = torch.nn.functional.cross_entropy(out.logits[:, :-1].reshape(-1, 20), input_ids[:, 1:].reshape(-1))
    torch.testing.assert_close(out.loss, expected)
    hidden = model.model(input_ids, output_hidden_states=True).hidden_states
    blocks = [layer for layer in model.model.layers if isinstance(layer, DecoderBlock)]
    manual = sum(block.mixer_norm(h).pow(2).mean() for block, h in zip(blocks, hidden))  # summed over layers
    torch.testing.assert_close(out.aux_losses["activation"], manual)


# --- continuous inputs and regression outputs -------------------------------------------------------------------


@pytest.mark.parametrize("arch", ARCHS)
def test_regression_shell_shapes_and_gradients(arch):
    config = hf_icl.config_for(arch, "tiny", input_dim=5, output_dim=1)
    torch.manual_seed(0)
    model = regression_class(config)(config)
    assert model.model.embed_tokens is None
    assert not [name for name, _ in model.named_parameters() if "embed_tokens" in name]
    out = model(torch.randn(2, 7, 5))
    assert out.predictions.shape == (2, 7, 1) and out.loss is None
    assert all(value.ndim == 0 for value in out.aux_losses.values())  # slow/fast reports its regularisers
    out.predictions.sum().backward()
    assert [name for name, p in model.named_parameters() if p.grad is None] == []


@pytest.mark.parametrize("arch", ["transformer", "mamba", "gla", "regular_gpt"])
def test_regression_with_left_padding_and_maps(arch):
    config = hf_icl.config_for(arch, "tiny", input_dim=3, output_dim=2)
    torch.manual_seed(0)
    model = regression_class(config)(config).eval()
    inputs = torch.randn(2, 8, 3)
    attention_mask = (torch.arange(8)[None] >= torch.tensor([[2], [0]])).long()
    with torch.no_grad():
        out = model(inputs, attention_mask=attention_mask, output_attentions=True, output_hidden_states=True)
        alone = model(inputs[:1, 2:]).predictions
    assert out.predictions.shape == (2, 8, 2) and len(out.hidden_states) == len(out.attentions) + 1
    if arch != "regular_gpt":  # adaptive depth reads the padded length (P2), so padding may add depth
        torch.testing.assert_close(out.predictions[0, 2:], alone[0], atol=1e-5, rtol=0)


def test_continuous_input_errors_name_the_field():
    for field, value in (("input_dim", 0), ("output_dim", -2), ("input_dim", 2.5), ("output_dim", True)):
        with pytest.raises(ValueError, match=f"{field}={value!r} (must be a positive integer or None|is not allowed)"):
            hf_icl.config_for("transformer", "tiny", **{field: value})
    config = hf_icl.config_for("transformer", "tiny", input_dim=4)
    with pytest.raises(ValueError, match="output_dim=None"):
        regression_class(config)(config)
    with pytest.raises(ValueError, match="input_dim=4 leaves no token embedding"):
        AutoModelForCausalLM.from_config(config)
    backbone = regression_class(config).base_model_class(config)
    with pytest.raises(ValueError, match="input_dim=4 is set, so the model has no token embedding"):
        backbone(torch.ones(1, 3, dtype=torch.long))


# --- RegularGPT's C under its own name --------------------------------------------------------------------------


def test_old_chunk_size_key_loads_as_dilated_attention_chunk_size(tmp_path):
    config = ICLRegularGPTConfig.from_dict({"chunk_size": 3, "vocab_size": 10})
    assert config.dilated_attention_chunk_size == 3 and "chunk_size" not in config.to_dict()
    old = hf_icl.config_for("regular_gpt", "tiny", dilated_attention_chunk_size=3).to_dict()
    old["chunk_size"] = old.pop("dilated_attention_chunk_size")  # a config.json written before the rename
    (tmp_path / "config.json").write_text(json.dumps(old))
    loaded = AutoConfig.from_pretrained(tmp_path)
    assert loaded.dilated_attention_chunk_size == 3
    assert AutoModelForCausalLM.from_config(loaded).model.layers[0].mixer.offset_bias.shape[-1] == 3
    with pytest.raises(ValueError, match="chunk_size=3 \\(former name\\) disagrees"):
        ICLRegularGPTConfig(chunk_size=3, dilated_attention_chunk_size=4)
