"""Architecture registry: every architecture is a config class plus thin model shells, registered with Auto*.

`ARCHITECTURES` maps the public architecture name (as used by `train.py --architecture`) to its `Architecture`
entry: its classes, its presets and its capabilities. Code that needs a capability asks the entry, never the name.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType

from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

from ..mixers import MIXERS
from ..modeling.configuration import ICLConfig, check_choice
from ..validation import check_field_values
from .auto import AutoModelForInContextRegression
from .gla import ICLGLAConfig, ICLGLAForCausalLM, ICLGLAForRegression, ICLGLAModel
from .h3 import ICLH3Config, ICLH3ForCausalLM, ICLH3ForRegression, ICLH3Model
from .hyena import ICLHyenaConfig, ICLHyenaForCausalLM, ICLHyenaForRegression, ICLHyenaModel
from .linear_transformer import (
    ICLLinearTransformerConfig,
    ICLLinearTransformerForCausalLM,
    ICLLinearTransformerForRegression,
    ICLLinearTransformerModel,
)
from .llama import ICLLlamaConfig, ICLLlamaForCausalLM, ICLLlamaForRegression, ICLLlamaModel
from .lstm import ICLLSTMConfig, ICLLSTMForCausalLM, ICLLSTMForRegression, ICLLSTMModel
from .mamba import ICLMambaConfig, ICLMambaForCausalLM, ICLMambaForRegression, ICLMambaModel
from .mambaformer import (
    ICLMambaFormerConfig,
    ICLMambaFormerForCausalLM,
    ICLMambaFormerForRegression,
    ICLMambaFormerModel,
)
from .regular_gpt import ICLRegularGPTConfig, ICLRegularGPTForCausalLM, ICLRegularGPTForRegression, ICLRegularGPTModel
from .retnet import ICLRetNetConfig, ICLRetNetForCausalLM, ICLRetNetForRegression, ICLRetNetModel
from .rwkv import ICLRWKVConfig, ICLRWKVForCausalLM, ICLRWKVForRegression, ICLRWKVModel
from .s4 import ICLS4Config, ICLS4ForCausalLM, ICLS4ForRegression, ICLS4Model
from .s4_mamba import ICLS4MambaConfig, ICLS4MambaForCausalLM, ICLS4MambaForRegression, ICLS4MambaModel
from .slowfast_transformer import (
    ICLSlowFastTransformerConfig,
    ICLSlowFastTransformerForCausalLM,
    ICLSlowFastTransformerForRegression,
    ICLSlowFastTransformerModel,
)
from .standard_hybrid import (
    ICLStandardHybridConfig,
    ICLStandardHybridForCausalLM,
    ICLStandardHybridForRegression,
    ICLStandardHybridModel,
)
from .transformer import (
    ICLTransformerConfig,
    ICLTransformerForCausalLM,
    ICLTransformerForRegression,
    ICLTransformerModel,
)


@dataclass(frozen=True)
class Architecture:
    """One architecture of the zoo: its classes, its presets and what it can do.

    The capabilities are derived when the entry is made, from what the classes declare, so a new mixer or
    architecture states them once (on the mixer class or the config class) and every entry using it follows:

    - `recurrent_decode`: every mixer of the default configuration declares `recurrent = True`, i.e. cached
      decoding costs O(1) per token and `state_size()` is the fixed state per sequence (not `None`).
    - `attention_maps`: some mixer declares `returns_attention_maps = True` (softmax attention, whose maps the
      analysis tools can read).
    - `ngram_heads`: the config class's `supports_ngram_heads` (`config.ngram_heads` is accepted).
    - `continuous_inputs`: there is a regression model and the backbone's forward takes `inputs_embeds`, so its
      read-in `Linear(d_x, d)` can feed it.

    Mixer-based capabilities describe the default configuration (`config_class()`); a preset that changes the
    mixers, such as `mamba`'s `mamba_hybrid_middle` (one attention block), can lose `recurrent_decode`.

    Args:
        name (`str`): the public name (`train.py --architecture`).
        config_class: the `ICLConfig` subclass.
        model_class: the backbone (`AutoModel`).
        causal_lm_class: the language model (`AutoModelForCausalLM`).
        regression_class (*optional*): the in-context regression model, where the architecture has one.
    """

    name: str
    config_class: type[ICLConfig]
    model_class: type
    causal_lm_class: type
    regression_class: type | None = None
    presets: Mapping[str, Mapping] = field(init=False, compare=False, repr=False)
    recurrent_decode: bool = field(init=False)
    attention_maps: bool = field(init=False)
    ngram_heads: bool = field(init=False)
    continuous_inputs: bool = field(init=False)

    def __post_init__(self):
        mixers = [MIXERS[name] for name in dict.fromkeys(self.config_class().mixer_types)]
        derived = {
            "presets": MappingProxyType(self.config_class.PRESETS),
            "recurrent_decode": all(mixer.recurrent for mixer in mixers),
            "attention_maps": any(mixer.returns_attention_maps for mixer in mixers),
            "ngram_heads": self.config_class.supports_ngram_heads,
            "continuous_inputs": self.regression_class is not None
            and "inputs_embeds" in inspect.signature(self.model_class.forward).parameters,
        }
        for key, value in derived.items():
            object.__setattr__(self, key, value)  # frozen: set once, here


ARCHITECTURES: dict[str, Architecture] = {
    entry.name: entry
    for entry in (
        Architecture(
            "transformer",
            ICLTransformerConfig,
            ICLTransformerModel,
            ICLTransformerForCausalLM,
            ICLTransformerForRegression,
        ),
        Architecture(
            "regular_gpt", ICLRegularGPTConfig, ICLRegularGPTModel, ICLRegularGPTForCausalLM, ICLRegularGPTForRegression
        ),
        Architecture("llama", ICLLlamaConfig, ICLLlamaModel, ICLLlamaForCausalLM, ICLLlamaForRegression),
        Architecture(
            "linear_transformer",
            ICLLinearTransformerConfig,
            ICLLinearTransformerModel,
            ICLLinearTransformerForCausalLM,
            ICLLinearTransformerForRegression,
        ),
        Architecture("retnet", ICLRetNetConfig, ICLRetNetModel, ICLRetNetForCausalLM, ICLRetNetForRegression),
        Architecture("gla", ICLGLAConfig, ICLGLAModel, ICLGLAForCausalLM, ICLGLAForRegression),
        Architecture("lstm", ICLLSTMConfig, ICLLSTMModel, ICLLSTMForCausalLM, ICLLSTMForRegression),
        Architecture("rwkv", ICLRWKVConfig, ICLRWKVModel, ICLRWKVForCausalLM, ICLRWKVForRegression),
        Architecture("s4", ICLS4Config, ICLS4Model, ICLS4ForCausalLM, ICLS4ForRegression),
        Architecture("h3", ICLH3Config, ICLH3Model, ICLH3ForCausalLM, ICLH3ForRegression),
        Architecture("hyena", ICLHyenaConfig, ICLHyenaModel, ICLHyenaForCausalLM, ICLHyenaForRegression),
        Architecture("mamba", ICLMambaConfig, ICLMambaModel, ICLMambaForCausalLM, ICLMambaForRegression),
        Architecture(
            "mambaformer",
            ICLMambaFormerConfig,
            ICLMambaFormerModel,
            ICLMambaFormerForCausalLM,
            ICLMambaFormerForRegression,
        ),
        Architecture(
            "standard_hybrid",
            ICLStandardHybridConfig,
            ICLStandardHybridModel,
            ICLStandardHybridForCausalLM,
            ICLStandardHybridForRegression,
        ),
        Architecture("s4_mamba", ICLS4MambaConfig, ICLS4MambaModel, ICLS4MambaForCausalLM, ICLS4MambaForRegression),
        Architecture(
            "slowfast_transformer",
            ICLSlowFastTransformerConfig,
            ICLSlowFastTransformerModel,
            ICLSlowFastTransformerForCausalLM,
            ICLSlowFastTransformerForRegression,
        ),
    )
}


def _register() -> None:
    for entry in ARCHITECTURES.values():
        AutoConfig.register(entry.config_class.model_type, entry.config_class)
        AutoModel.register(entry.config_class, entry.model_class)
        AutoModelForCausalLM.register(entry.config_class, entry.causal_lm_class)
        if entry.regression_class is not None:
            AutoModelForInContextRegression.register(entry.config_class, entry.regression_class)


_register()


def list_architectures() -> list[str]:
    """Names accepted by `config_for` and `train.py --architecture`."""
    return sorted(ARCHITECTURES)


def config_for(architecture: str, preset: str = "tiny", **overrides) -> ICLConfig:
    """Build the config of `architecture` at a size `preset`, with field overrides (e.g. `vocab_size=20`).

    Args:
        architecture (`str`): one of `list_architectures()`.
        preset (`str`): a size preset of that architecture (`tiny`, `small`, `base`, ...).
        **overrides: config fields; unknown names raise `ValueError` listing the valid ones.
    """
    check_choice("architecture", architecture, list_architectures())
    config_cls = ARCHITECTURES[architecture].config_class
    known = {f.name for f in fields(config_cls)} | set(config_cls.RENAMED_FIELDS)
    for key in overrides:
        if key not in known:
            allowed = ", ".join(sorted(known))
            raise ValueError(f"config field {key!r} is not a field of {config_cls.__name__}: {allowed}")
    check_field_values(config_cls, overrides)  # a value of the wrong type fails here, not inside the model
    return config_cls.from_preset(preset, **overrides)


def non_embedding_parameters(model) -> int:
    """Parameters outside the token/position embeddings and the output projection (the size presets match this)."""
    skipped = ("embed_tokens", "embed_positions", "lm_head")
    return sum(p.numel() for name, p in model.named_parameters() if not any(part in name for part in skipped))
