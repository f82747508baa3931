"""Declared extension points: registry entries and their capabilities, n-gram-head acceptance, residual-projection
init, and the shared size presets (pinned to the values they had before they were factored into `SIZES`)."""

import dataclasses
import json
import math
from pathlib import Path

import pytest
import torch
from torch import nn
from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

import hf_icl
from hf_icl.architectures import ARCHITECTURES, Architecture
from hf_icl.block_features import block_feature
from hf_icl.block_features.ngram_heads import NgramBlock
from hf_icl.mixers import CausalSelfAttention, SlidingDilatedAttention, SlidingWindowAttention, list_mixers, mixer_spec
from hf_icl.mixers.ngram import NgramHead
from hf_icl.modeling.configuration import SIZES, block_feature_architectures, size_presets
from hf_icl.modeling.layers import DecoderBlock

ARCHS = hf_icl.list_architectures()
NGRAM_SPEC = [{"layer": 0, "orders": [1, 2]}]

# What the papers say each architecture can do: the oracle the derived capabilities must reproduce.
NOT_RECURRENT = {"transformer", "llama", "regular_gpt", "hyena", "mambaformer", "standard_hybrid"}
NOT_RECURRENT |= {"slowfast_transformer"}
WITH_ATTENTION = {"transformer", "llama", "regular_gpt", "mambaformer", "standard_hybrid", "slowfast_transformer"}
WITH_ATTENTION |= {"based"}  # its sliding-window attention layers
WITHOUT_MAPS = {"lstm"}  # every other mixer reports softmax or exact linear maps
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
    if entry.config_class.__module__.startswith("hf_icl."):  # the zoo; a plug-in declares its own
        assert entry.mixing_maps == (arch not in WITHOUT_MAPS)
    assert ("ngram_heads" in entry.block_features) == (arch not in WITHOUT_NGRAM_HEADS)
    assert entry.continuous_inputs


@pytest.mark.parametrize("arch", ARCHS)
def test_capabilities_match_the_built_model(arch):
    entry, model = ARCHITECTURES[arch], tiny(arch)
    mixers = [layer.mixer for layer in model.model.layers]
    softmax_classes = CausalSelfAttention | SlidingDilatedAttention | SlidingWindowAttention
    softmax = any(isinstance(mixer, softmax_classes) for mixer in mixers)
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
    if "ngram_heads" in entry.block_features:
        with_heads = tiny(arch, ngram_heads=NGRAM_SPEC)
        assert sum(isinstance(layer, NgramBlock) for layer in with_heads.model.layers) == 2


@pytest.mark.parametrize("arch", sorted(WITHOUT_NGRAM_HEADS))
def test_ngram_heads_fail_at_config_time_naming_the_architectures_that_take_them(arch):
    accepting = [name for name in ARCHS if "ngram_heads" in ARCHITECTURES[name].block_features]
    assert block_feature_architectures(block_feature("ngram_heads")) == accepting
    with pytest.raises(ValueError, match="ngram_heads") as error:
        hf_icl.config_for(arch, "tiny", ngram_heads=NGRAM_SPEC)
    assert f"Architectures that accept ngram_heads: {', '.join(accepting)}" in str(error.value)


@pytest.mark.parametrize("name", [*list_mixers(), "ngram"])
def test_every_mixer_declares_its_capabilities(name):
    """Read from the registry: a mixer registered anywhere (a plug-in too) is checked with no list edited."""
    if name == "ngram":  # the n-gram head is placed by `ngram_heads`, not by `mixer_types`
        cls, config = NgramHead, hf_icl.config_for("transformer", "tiny")
        mixer = cls(config, 0, 2)
    else:
        spec = mixer_spec(name)
        cls, config = spec.mixer_class, hf_icl.config_for("transformer", "tiny", mixer=name)
        assert config.mixer_types == [name] * config.num_hidden_layers
        assert set(config.mixer_fields()) == set(spec.config_fields)  # its declared fields, filled in
        mixer = cls(config, 0)
        assert (spec.recurrent, spec.attention_maps) == (cls.recurrent, cls.returns_attention_maps)
    assert isinstance(cls.recurrent, bool) and isinstance(cls.returns_attention_maps, bool), name
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
    if "ngram_heads" in ARCHITECTURES[arch].block_features
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


# Resolved values of every preset, pinned (`tests/data/pinned_presets.json`, written from the registry when the sizes
# were factored into `SIZES` and the mixer fields moved into the mixers' files): a refactor must not change a preset.
# An architecture registered later has nothing to regress against until its resolved presets are added to the file;
# a deliberate preset change edits its entry there (RegularGPT's `dilated_attention_missing_keys`, issue 28).
PINNED_PRESETS = json.loads((Path(__file__).parent / "data" / "pinned_presets.json").read_text())


@pytest.mark.parametrize("arch", sorted(PINNED_PRESETS))
def test_resolved_presets_are_pinned(arch):
    assert list(ARCHITECTURES[arch].presets) == list(PINNED_PRESETS[arch])
    for preset, pinned in PINNED_PRESETS[arch].items():
        c = hf_icl.config_for(arch, preset)
        resolved = {field: getattr(c, field) for field in ("hidden_size", "num_hidden_layers", "num_attention_heads")}
        resolved |= {"intermediate_size": c.intermediate_size, "mixer_types": c.mixer_types, "ffn_types": c.ffn_types}
        assert resolved | c.mixer_fields() == pinned, (arch, preset)


def test_size_presets_merge_deltas_onto_the_shared_sizes():
    presets = size_presets(heads=False, num_hidden_layers=(3, 6, 12), ssm_state_size=32)
    assert list(presets) == list(SIZES)
    assert presets["base"] == {"hidden_size": 256, "num_hidden_layers": 12, "ssm_state_size": 32}
    assert size_presets()["tiny"] == SIZES["tiny"] and size_presets()["tiny"] is not SIZES["tiny"]
    with pytest.raises(ValueError, match="one value per size: tiny, small, base"):
        size_presets(num_hidden_layers=(3, 6))
