"""Exact token-mixing maps (`output_attentions=True`) for every mixer whose output is linear in its values: the map
applied to the mixer's values equals the mixer's output before any per-position operation, for any input, padding
and length (hypothesis); maps are causal and finite under hard forgetting; through a model every layer reports
one (B, H, T, T) map (LSTM: `None`), in a forward and through `generate`."""

import functools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import AutoModelForCausalLM

import hf_icl
from hf_icl.architectures import ARCHITECTURES
from hf_icl.mixers import MIXERS, list_mixers, mixer_spec

MAP_MIXERS = sorted(name for name in list_mixers() if mixer_spec(name).mixing_maps)
# Item 3 of the issue: every mixer whose output is linear in its values declares a map.
LINEAR_IN_VALUES = {"linear_attention", "retention", "gla", "deltanet", "gated_deltanet", "mamba", "s4_mamba"}
LINEAR_IN_VALUES |= {"mamba2", "s4", "h3", "hyena", "rwkv", "rwkv7", "based"}


def test_every_mixer_linear_in_its_values_declares_a_map():
    assert LINEAR_IN_VALUES <= set(MAP_MIXERS)
    assert not mixer_spec("lstm").mixing_maps  # σ/tanh on the state: no linear map exists


def config_using(mixer, **overrides):
    """The tiny config of an architecture made of `mixer` (its shapes), else the Transformer with that mixer."""
    for name in hf_icl.list_architectures():
        if mixer in ARCHITECTURES[name].config_class().mixer_types:
            return hf_icl.config_for(name, "tiny", vocab_size=20, **overrides)
    return hf_icl.config_for("transformer", "tiny", vocab_size=20, mixer=mixer, **overrides)


@functools.cache
def mixer_under_test(name, width=64, heads=2):
    torch.manual_seed(0)
    config = config_using(name, hidden_size=width, num_attention_heads=heads)
    index = config.mixer_types.index(name)
    mixer = MIXERS[name](config, layer_idx=index)
    with torch.no_grad():
        for module in mixer.modules():
            if hasattr(module, "reset_mixer_parameters"):
                module.reset_mixer_parameters()
        for parameter in mixer.parameters():  # off the init values: gates and decays that vary by channel
            parameter.add_(0.1 * torch.randn_like(parameter))
    return mixer.eval(), config.hidden_size


@pytest.mark.parametrize("name", MAP_MIXERS)
@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    batch=st.integers(1, 2),
    length=st.integers(1, 40),
    padded=st.integers(0, 5),
    shape=st.sampled_from([(64, 2), (32, 1), (64, 4)]),  # (hidden_size, num_attention_heads) of the config
)
def test_map_applied_to_the_values_is_the_output(name, seed, batch, length, padded, shape):
    mixer, width = mixer_under_test(name, *shape)
    gen = torch.Generator().manual_seed(seed)
    hidden = torch.randn(batch, length, width, generator=gen)
    mask = None
    if padded:
        mask = torch.arange(length)[None] >= torch.randint(0, min(padded, length) + 1, (batch, 1), generator=gen)
    with torch.no_grad():
        mixing = mixer.mixing_map(hidden, mask)
    maps, values, output = mixing.maps, mixing.values, mixing.output
    assert maps.shape == (*values.shape[:2], length, length) and output.shape == values.shape
    assert torch.isfinite(maps).all()
    assert (maps.triu(1) == 0).all()  # causal
    if mask is not None:  # padded positions contribute nothing to real ones
        assert (maps * (~mask)[:, None, None, :] * mask[:, None, :, None] == 0).all()
        output, maps = output * mask[:, None, :, None], maps * mask[:, None, :, None]  # padded rows are not outputs
    # 1e-5 at the output's scale: the mixers run in float32, and an FFT convolution (S4, H3, Hyena) rounds its sums
    # differently from the map's direct ones (H3 at seed 552, T = 28: 1.7e-5 off on an output of magnitude ~2)
    scale = output.abs().max().item() + 1.0
    torch.testing.assert_close(maps.double() @ values.double(), output.double(), atol=1e-5 * scale, rtol=1e-5)


@pytest.mark.parametrize("name", ["gla", "retention", "gated_deltanet", "mamba2", "mamba", "rwkv7", "rwkv"])
def test_maps_of_hard_forgetting_mixers_stay_finite_and_exact(name):
    """Decays of hundreds of nats across the sequence: no exp overflow (every exponent is a difference ≤ 0)."""
    mixer, width = mixer_under_test(name)
    hidden = 5 * torch.randn(1, 300, width, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        mixing = mixer.mixing_map(hidden)
    assert torch.isfinite(mixing.maps).all()
    scale = mixing.output.abs().max().item()  # outputs reach 10³ here: float32 rounding is relative to that
    torch.testing.assert_close(mixing.maps.double() @ mixing.values.double(), mixing.output.double(),
                               atol=1e-5 * scale, rtol=0)  # fmt: skip


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), length=st.integers(1, 50), chunk=st.integers(1, 20), padded=st.integers(0, 6))
def test_mamba_chunked_map_equals_the_direct_sum(seed, length, chunk, padded):
    """Keys before a block go through the split decay and one matmul; summing every term directly (one block of
    all T rows) must give the same map, padding included."""
    mixer, width = mixer_under_test("mamba")
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(2, length, 2 * width, generator=gen)  # the S6 input (B, T, d_inner)
    mask = torch.arange(length)[None] >= torch.tensor([[0], [min(padded, length - 1)]])
    with torch.no_grad():
        direct = mixer.ssm.selective_map(x, mask, chunk=length)
        chunked = mixer.ssm.selective_map(x, mask, chunk=chunk)
    torch.testing.assert_close(chunked, direct, atol=1e-6, rtol=1e-5)


def tiny(arch):
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(hf_icl.config_for(arch, "tiny", vocab_size=20)).eval()


MAP_ARCHS = ["gla", "mamba", "deltanet", "rwkv7", "based", "hyena", "lstm"]


@pytest.mark.parametrize("arch", MAP_ARCHS)
def test_every_layer_reports_its_map_and_generate_returns_them(arch):
    model = tiny(arch)
    input_ids = torch.tensor([[0, 0, 0, 3, 5, 7, 19, 2, 4], [1, 2, 3, 4, 19, 5, 6, 7, 8]])
    attention_mask = (torch.arange(9)[None] >= torch.tensor([[3], [0]])).long()
    with torch.no_grad():
        default = model(input_ids, attention_mask=attention_mask)
        out = model(input_ids, attention_mask=attention_mask, output_attentions=True)
    torch.testing.assert_close(out.logits, default.logits, atol=1e-5, rtol=0)
    for layer, maps in zip(model.model.layers, out.attentions):
        spec = mixer_spec(next(n for n, c in MIXERS.items() if type(layer.mixer) is c))
        if not (spec.mixing_maps or spec.attention_maps):
            assert maps is None
            continue
        assert maps.shape[0] == 2 and maps.shape[2:] == (9, 9)
    kwargs = dict(attention_mask=attention_mask, max_new_tokens=3, do_sample=False, pad_token_id=0, eos_token_id=None)
    generated = model.generate(input_ids, output_attentions=True, return_dict_in_generate=True, **kwargs)
    assert torch.equal(generated.sequences, model.generate(input_ids, **kwargs))
    for step, maps in enumerate(generated.attentions):  # prefill (T = 9), then one row over 10, 11 positions
        for layer_maps in maps:
            if layer_maps is not None:
                assert layer_maps.shape[2:] == ((9, 9) if step == 0 else (1, 9 + step))
    # the decoded rows are the last rows of the full sequence's maps
    with torch.no_grad():
        full = model(generated.sequences[:, :-1], attention_mask=torch.cat([attention_mask, torch.ones(2, 2)], 1),
                     output_attentions=True).attentions  # fmt: skip
    for last, whole in zip(generated.attentions[-1], full):
        if last is not None:
            torch.testing.assert_close(last[:, :, -1], whole[:, :, -1], atol=1e-5, rtol=1e-5)


DECLARED = sorted(name for name in list_mixers() if mixer_spec(name).map_axis is not None)


def computed_map(name, width):
    """(B, H, T, T) map of mixer `name` at hidden size `width` with random weights, through `mixing_map` for a linear
    mixer and through a model's `output_attentions` for softmax attention."""
    torch.manual_seed(0)
    hidden = torch.randn(2, 11, width)
    if mixer_spec(name).mixing_maps:
        mixer, _ = mixer_under_test(name, width, 2)
        with torch.no_grad():
            return mixer.mixing_map(hidden, None).maps
    config = config_using(name, hidden_size=width, num_attention_heads=2)
    model = AutoModelForCausalLM.from_config(config).eval()
    with torch.no_grad():
        attentions = model(torch.randint(0, 20, (2, 11)), output_attentions=True).attentions
    return attentions[config.mixer_types.index(name)]


@pytest.mark.parametrize("name", DECLARED)
def test_each_mixer_declares_what_its_map_holds(name):
    """The table of docs/interpretability.md is these declarations: H is what `map_axis` says, at two widths, and
    rows sum to 1 exactly when `map_rows_sum_to_one` says so (random weights: a linear map's rows do not)."""
    spec = mixer_spec(name)
    for width in (32, 64):
        maps = computed_map(name, width)
        heads = maps.shape[1]
        if spec.map_axis == "channels":
            assert heads == width
        elif spec.map_axis == "inner channels":
            assert heads > width and heads % width == 0  # expand · d
        else:
            assert 1 <= heads < width
        sums = maps.sum(-1)
        assert torch.allclose(sums, torch.ones_like(sums), atol=1e-4) == spec.map_rows_sum_to_one


def test_a_mixer_with_maps_must_say_what_h_indexes():
    from hf_icl.mixers.registry import register_mixer

    class Undeclared(torch.nn.Module):
        recurrent, returns_attention_maps, state_size = False, True, None

        def forward(self, hidden_states, **kwargs):
            return hidden_states

    with pytest.raises(ValueError, match="map_axis .* must be one of: heads, channels, inner channels"):
        register_mixer("undeclared_map_axis_probe")(Undeclared)
    assert "undeclared_map_axis_probe" not in list_mixers()
