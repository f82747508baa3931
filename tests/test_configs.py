"""Config properties over the whole zoo: presets build, round-trip through JSON, and validate their fields."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import AutoConfig

import hf_icl
from hf_icl.architectures import ARCHITECTURES


@pytest.mark.parametrize("arch", hf_icl.list_architectures())
def test_every_preset_builds_and_round_trips(arch, tmp_path):
    for preset in ARCHITECTURES[arch].presets:
        config = hf_icl.config_for(arch, preset, vocab_size=20)
        assert config.preset == preset and len(config.mixer_types) == config.num_hidden_layers
        config.save_pretrained(tmp_path / preset)
        loaded = AutoConfig.from_pretrained(tmp_path / preset)
        assert type(loaded) is type(config)
        assert loaded.to_diff_dict() | {"_name_or_path": ""} == config.to_diff_dict() | {"_name_or_path": ""}


@settings(max_examples=30, deadline=None)
@given(
    hidden=st.sampled_from([16, 32, 48]),
    heads=st.sampled_from([1, 2, 4]),
    layers=st.integers(1, 4),
    vocab=st.integers(2, 64),
)
def test_overrides_are_applied(hidden, heads, layers, vocab):
    config = hf_icl.config_for(
        "transformer",
        "tiny",
        hidden_size=hidden,
        num_attention_heads=heads,
        num_hidden_layers=layers,
        vocab_size=vocab,
    )
    assert (config.hidden_size, config.num_attention_heads, config.num_hidden_layers) == (hidden, heads, layers)
    assert config.mixer_types == ["attention"] * layers and config.intermediate_size == 4 * hidden
