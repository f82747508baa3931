"""Declared extension points: registry entries and their capabilities, n-gram-head acceptance, residual-projection
init, and the shared size presets (pinned to the values they had before they were factored into `SIZES`)."""

import dataclasses
import math

import pytest
import torch
from torch import nn
from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

import hf_icl
from hf_icl.mixers import MIXERS, CausalSelfAttention, SlidingDilatedAttention
from hf_icl.mixers.ngram import NgramHead
from hf_icl.modeling.configuration import SIZES, ngram_head_architectures, size_presets
from hf_icl.modeling.layers import DecoderBlock
from hf_icl.modeling.ngram_blocks import NgramBlock
from hf_icl.models import ARCHITECTURES, Architecture

ARCHS = hf_icl.list_architectures()
NGRAM_SPEC = [{"layer": 0, "orders": [1, 2]}]

# What the papers say each architecture can do: the oracle the derived capabilities must reproduce.
NOT_RECURRENT = {"transformer", "llama", "regular_gpt", "hyena", "mambaformer", "standard_hybrid"}
NOT_RECURRENT |= {"slowfast_transformer"}
WITH_ATTENTION = {"transformer", "llama", "regular_gpt", "mambaformer", "standard_hybrid", "slowfast_transformer"}
WITHOUT_NGRAM_HEADS = {"regular_gpt", "slowfast_transformer"}


def tiny(arch, **overrides):
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(hf_icl.config_for(arch, "tiny", vocab_size=20, **overrides)).eval()


def test_registry_maps_names_to_entries():
    assert ARCHS == sorted(ARCHITECTURES)
    assert "regression_class" in {f.name for f in dataclasses.fields(Architecture)}
    for name, entry in ARCHITECTURES.items():
        assert isinstance(entry, Architecture) and entry.name == name
        assert type(hf_icl.config_for(name, "tiny")) is entry.config_class
        config = AutoConfig.for_model(entry.config_class.model_type)
        assert type(config) is entry.config_class
        assert AutoModel._model_mapping[entry.config_class] is entry.model_class
        assert AutoModelForCausalLM._model_mapping[entry.config_class] is entry.causal_lm_class


def test_entries_are_frozen():
    entry = ARCHITECTURES["transformer"]
    for field in ("name", "config_class", "regression_class", "recurrent_decode", "attention_maps", "presets"):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(entry, field, None)
    with pytest.raises(TypeError):
        entry.presets["huge"] = {"hidden_size": 4096}  # a read-only view of the config class's PRESETS
    assert dict(entry.presets) == entry.config_class.PRESETS
    assert hash(entry) == hash(ARCHITECTURES["transformer"])


@pytest.mark.parametrize("arch", ARCHS)
def test_capabilities_are_the_papers(arch):
    entry = ARCHITECTURES[arch]
    assert entry.recurrent_decode == (arch not in NOT_RECURRENT)
    assert entry.attention_maps == (arch in WITH_ATTENTION)
    assert entry.ngram_heads == (arch not in WITHOUT_NGRAM_HEADS)
    assert entry.continuous_inputs


@pytest.mark.parametrize("arch", ARCHS)
def test_capabilities_match_the_built_model(arch):
    entry, model = ARCHITECTURES[arch], tiny(arch)
    mixers = [layer.mixer for layer in model.model.layers]
    softmax = any(isinstance(mixer, CausalSelfAttention | SlidingDilatedAttention) for mixer in mixers)
    assert entry.attention_maps == softmax
    if entry.recurrent_decode:
        assert all(mixer.state_size() is not None for mixer in mixers)
    else:
        assert model.model.state_size() is None
    # Recurrent decoding keeps a state of fixed size; otherwise the cache grows with every decoded token.
    input_ids = torch.randint(1, 20, (2, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        cache = model(input_ids[:, :6], use_cache=True).cache
        sizes = [cache.nbytes_per_sequence()]
        for t in range(6, 9):
            cache = model(input_ids[:, t : t + 1], cache=cache, use_cache=True).cache
            sizes.append(cache.nbytes_per_sequence())
    assert (len(set(sizes)) == 1) == entry.recurrent_decode, sizes
    if entry.continuous_inputs:  # the backbone reads embeddings as well as token ids
        with torch.no_grad():
            from_ids = model(input_ids).logits
            from_embeddings = model(inputs_embeds=model.get_input_embeddings()(input_ids)).logits
        torch.testing.assert_close(from_embeddings, from_ids)
    if entry.ngram_heads:
        with_heads = tiny(arch, ngram_heads=NGRAM_SPEC)
        assert sum(isinstance(layer, NgramBlock) for layer in with_heads.model.layers) == 2


@pytest.mark.parametrize("arch", sorted(WITHOUT_NGRAM_HEADS))
def test_ngram_heads_fail_at_config_time_naming_the_architectures_that_take_them(arch):
    accepting = [name for name in ARCHS if ARCHITECTURES[name].ngram_heads]
    assert ngram_head_architectures() == accepting
    with pytest.raises(ValueError, match="ngram_heads") as error:
        hf_icl.config_for(arch, "tiny", ngram_heads=NGRAM_SPEC)
    assert f"Architectures that accept n-gram heads: {', '.join(accepting)}" in str(error.value)


def test_every_mixer_declares_its_capabilities():
    config = hf_icl.config_for("transformer", "tiny")
    classes = dict(MIXERS) | {"ngram": NgramHead}
    for name, cls in classes.items():
        assert isinstance(cls.recurrent, bool) and isinstance(cls.returns_attention_maps, bool), name
        mixer = cls(config, 0, 2) if cls is NgramHead else cls(config, 0)
        assert cls.recurrent == (mixer.state_size() is not None), name


def residual_rule_by_name(model):
    """The rule `_init_weights` used before residual projections were declared: matching attribute names."""
    names = set()
    for prefix, module in model.named_modules():
        if isinstance(module, DecoderBlock):
            for part_name in ("mixer", "ffn", "slow_mixer", "slow_ffn"):  # slow_*: the slow/fast blocks' y stream
                for name in ("out_proj", "fc_out", "down_proj"):
                    if isinstance(getattr(getattr(module, part_name, None), name, None), nn.Linear):
                        names.add(f"{prefix}.{part_name}.{name}.weight")
    return names


def declared_residual_projections(model):
    return {f"{name}.weight" for name, m in model.named_modules() if getattr(m, "is_residual_projection", False)}


CASES = [
    pytest.param(arch, preset, {}, id=f"{arch}-{preset}") for arch in ARCHS for preset in ARCHITECTURES[arch].presets
]
CASES += [
    pytest.param(arch, "tiny", {"ngram_heads": NGRAM_SPEC}, id=f"{arch}-tiny-ngram")
    for arch in ARCHS
    if ARCHITECTURES[arch].ngram_heads
]


@pytest.mark.parametrize(("arch", "preset", "overrides"), CASES)
def test_residual_projections_are_the_old_name_rule(arch, preset, overrides):
    with torch.device("meta"):  # shapes and attributes only
        model = AutoModelForCausalLM.from_config(hf_icl.config_for(arch, preset, vocab_size=20, **overrides))
    expected = residual_rule_by_name(model)
    assert expected or arch == "lstm"  # every block has an output projection, but for the bare LSTM's
    assert declared_residual_projections(model) == expected


@pytest.mark.parametrize("arch", ARCHS)
def test_residual_projections_get_the_scaled_init(arch):
    model = tiny(arch)
    config = model.config
    std = config.initializer_range / math.sqrt(2 * config.num_hidden_layers)
    params = dict(model.named_parameters())
    for name in declared_residual_projections(model):
        assert params[name].std().item() == pytest.approx(std, rel=0.1), name


# Resolved values of every preset before the sizes were factored into `SIZES`:
# (hidden_size, num_hidden_layers, num_attention_heads, intermediate_size, ssm_state_size, hyena_filter_size,
#  mixer_types, ffn_types), lists coded by MIXER_CODES / FFN_CODES.
MIXER_CODES = {
    "attention": "A",
    "dilated_attention": "D",
    "linear_attention": "L",
    "retention": "R",
    "gla": "G",
    "lstm": "S",
    "rwkv": "W",
    "s4": "4",
    "h3": "3",
    "hyena": "Y",
    "mamba": "M",
    "s4_mamba": "4M",
}
FFN_CODES = {"mlp": "m", "glu": "g", "none": "-"}
PINNED_PRESETS = {
    "gla": {
        "tiny": (64, 2, 2, 176, 16, 64, "G G", "gg"),
        "small": (128, 4, 2, 344, 16, 64, "G G G G", "gggg"),
        "base": (256, 8, 4, 688, 16, 64, "G G G G G G G G", "gggggggg"),
    },
    "h3": {
        "tiny": (64, 2, 8, 256, 64, 64, "3 3", "mm"),
        "small": (128, 4, 16, 512, 64, 64, "3 3 3 3", "mmmm"),
        "base": (256, 8, 32, 1024, 64, 64, "3 3 3 3 3 3 3 3", "mmmmmmmm"),
    },
    "hyena": {
        "tiny": (64, 2, 2, 240, 16, 16, "Y Y", "mm"),
        "small": (128, 4, 2, 496, 16, 32, "Y Y Y Y", "mmmm"),
        "base": (256, 8, 2, 1000, 16, 64, "Y Y Y Y Y Y Y Y", "mmmmmmmm"),
    },
    "linear_transformer": {
        "tiny": (64, 2, 2, 256, 16, 64, "L L", "mm"),
        "small": (128, 4, 2, 512, 16, 64, "L L L L", "mmmm"),
        "base": (256, 8, 4, 1024, 16, 64, "L L L L L L L L", "mmmmmmmm"),
    },
    "llama": {
        "tiny": (64, 2, 2, 176, 16, 64, "A A", "gg"),
        "small": (128, 4, 2, 344, 16, 64, "A A A A", "gggg"),
        "base": (256, 8, 4, 688, 16, 64, "A A A A A A A A", "gggggggg"),
    },
    "lstm": {
        "tiny": (64, 3, 2, 256, 16, 64, "S S S", "---"),
        "small": (128, 6, 2, 512, 16, 64, "S S S S S S", "------"),
        "base": (256, 12, 2, 1024, 16, 64, "S S S S S S S S S S S S", "------------"),
    },
    "mamba": {
        "tiny": (64, 3, 2, 256, 16, 64, "M M M", "---"),
        "small": (128, 7, 2, 512, 16, 64, "M M M M M M M", "-------"),
        "base": (256, 14, 2, 1024, 16, 64, "M M M M M M M M M M M M M M", "--------------"),
        "mamba_hybrid_middle": (128, 8, 2, 512, 16, 64, "M M M A M M M M", "--------"),
    },
    "mambaformer": {
        "tiny": (64, 4, 2, 256, 16, 64, "M A M A", "----"),
        "small": (128, 8, 2, 512, 16, 64, "M A M A M A M A", "--------"),
        "base": (256, 17, 4, 1024, 16, 64, "M A M A M A M A M A M A M A M A M", "-----------------"),
        "tf_initial_mamba": (128, 4, 2, 512, 16, 64, "M A A A", "-mmm"),
    },
    "regular_gpt": {
        "tiny": (64, 2, 2, 256, 16, 64, "D D", "mm"),
        "small": (128, 4, 2, 512, 16, 64, "D D D D", "mmmm"),
        "base": (256, 8, 4, 1024, 16, 64, "D D D D D D D D", "mmmmmmmm"),
        "paper": (256, 1, 8, 1024, 16, 64, "D", "m"),
    },
    "retnet": {
        "tiny": (64, 2, 2, 128, 16, 64, "R R", "mm"),
        "small": (128, 4, 2, 256, 16, 64, "R R R R", "mmmm"),
        "base": (256, 8, 4, 512, 16, 64, "R R R R R R R R", "mmmmmmmm"),
    },
    "rwkv": {
        "tiny": (64, 2, 2, 256, 16, 64, "W W", "mm"),
        "small": (128, 4, 2, 512, 16, 64, "W W W W", "mmmm"),
        "base": (256, 8, 2, 1024, 16, 64, "W W W W W W W W", "mmmmmmmm"),
    },
    "s4": {
        "tiny": (64, 2, 2, 256, 64, 64, "4 4", "mm"),
        "small": (128, 5, 2, 512, 64, 64, "4 4 4 4 4", "mmmmm"),
        "base": (256, 10, 2, 1024, 64, 64, "4 4 4 4 4 4 4 4 4 4", "mmmmmmmmmm"),
    },
    "s4_mamba": {
        "tiny": (64, 3, 2, 256, 32, 64, "4M 4M 4M", "---"),
        "small": (128, 7, 2, 512, 32, 64, "4M 4M 4M 4M 4M 4M 4M", "-------"),
        "base": (256, 15, 2, 1024, 32, 64, "4M 4M 4M 4M 4M 4M 4M 4M 4M 4M 4M 4M 4M 4M 4M", "---------------"),
    },
    "slowfast_transformer": {  # the fast stream x (d_x, h_x, i_x); the slow stream's sizes are slow_* fields
        "tiny": (60, 2, 2, 240, 16, 64, "A A", "mm"),
        "small": (120, 4, 2, 480, 16, 64, "A A A A", "mmmm"),
        "base": (232, 8, 4, 928, 16, 64, "A A A A A A A A", "mmmmmmmm"),
        "paper": (112, 6, 7, 448, 16, 64, "A A A A A A", "mmmmmm"),
    },
    "standard_hybrid": {
        "tiny": (64, 4, 2, 256, 16, 64, "A M A M", "----"),
        "small": (128, 8, 2, 512, 16, 64, "A M A M A M A M", "--------"),
        "base": (256, 18, 4, 1024, 16, 64, "A M A M A M A M A M A M A M A M A M", "------------------"),
    },
    "transformer": {
        "tiny": (64, 2, 2, 256, 16, 64, "A A", "mm"),
        "small": (128, 4, 2, 512, 16, 64, "A A A A", "mmmm"),
        "base": (256, 8, 4, 1024, 16, 64, "A A A A A A A A", "mmmmmmmm"),
        "paper_n2500": (128, 8, 1, 512, 16, 64, "A A A A A A A A", "mmmmmmmm"),
    },
}


@pytest.mark.parametrize("arch", ARCHS)
def test_resolved_presets_are_pinned(arch):
    assert list(ARCHITECTURES[arch].presets) == list(PINNED_PRESETS[arch])
    for preset, pinned in PINNED_PRESETS[arch].items():
        c = hf_icl.config_for(arch, preset)
        mixers = " ".join(MIXER_CODES[m] for m in c.mixer_types)
        ffns = "".join(FFN_CODES[f] for f in c.ffn_types)
        resolved = (c.hidden_size, c.num_hidden_layers, c.num_attention_heads, c.intermediate_size)
        resolved += (c.ssm_state_size, c.hyena_filter_size, mixers, ffns)
        assert resolved == pinned, (arch, preset)


def test_size_presets_merge_deltas_onto_the_shared_sizes():
    presets = size_presets(heads=False, num_hidden_layers=(3, 6, 12), ssm_state_size=32)
    assert list(presets) == list(SIZES)
    assert presets["base"] == {"hidden_size": 256, "num_hidden_layers": 12, "ssm_state_size": 32}
    assert size_presets()["tiny"] == SIZES["tiny"] and size_presets()["tiny"] is not SIZES["tiny"]
    with pytest.raises(ValueError, match="one value per size: tiny, small, base"):
        size_presets(num_hidden_layers=(3, 6))
