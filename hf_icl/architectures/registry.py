"""The architecture registry: each architecture folder registers itself with `register_architecture`.

`ARCHITECTURES` maps the public architecture name (`train.py --architecture`) to its `Architecture` entry: its
classes, its presets and its capabilities. Code that needs a capability asks the entry, never the name.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

from ..block_features.feature_registry import BLOCK_FEATURES
from ..mixers.registry import mixer_spec
from ..modeling.configuration import ICLConfig, accepts_block_feature
from .auto import AutoModelForInContextRegression


@dataclass(frozen=True)
class Architecture:
    """One architecture of the zoo: its classes, its presets and what it can do.

    The capabilities are derived when the entry is made, from what the classes declare, so a new mixer or
    architecture states them once (on the mixer class or the config class) and every entry using it follows:

    - `recurrent_decode`: every mixer of the default configuration is recurrent, i.e. cached decoding costs O(1)
      per token and `state_size()` is the fixed state per sequence (not `None`).
    - `attention_maps`: some mixer returns softmax attention maps (which the analysis tools read).
    - `mixing_maps`: every mixer reports a map under `output_attentions`, softmax or exact linear
      (`mixers.ops.mixing_maps`), so every layer's token mixing can be read (all but LSTM layers).
    - `block_features`: the registered block features a config of this class can turn on through their config
      field (`BlockFeature.selector`), e.g. `ngram_heads`; those that add layers need a `plain_layer_stack`.
    - `continuous_inputs`: there is a regression model, the backbone's forward takes `inputs_embeds` (so its
      read-in `Linear(d_x, d)` can feed it) and every mixer works without `input_ids`.

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
    mixing_maps: bool = field(init=False)
    block_features: tuple[str, ...] = field(init=False)
    continuous_inputs: bool = field(init=False)

    def __post_init__(self):
        mixers = [mixer_spec(name) for name in dict.fromkeys(self.config_class().mixer_types)]
        derived = {
            "presets": MappingProxyType(self.config_class.PRESETS),
            "recurrent_decode": all(mixer.recurrent for mixer in mixers),
            "attention_maps": any(mixer.attention_maps for mixer in mixers),
            "mixing_maps": all(mixer.attention_maps or mixer.mixing_maps for mixer in mixers),
            "block_features": tuple(
                name
                for name, feature in BLOCK_FEATURES.items()
                if feature.selector is not None and accepts_block_feature(self.config_class, feature)
            ),
            "continuous_inputs": self.regression_class is not None
            and "inputs_embeds" in inspect.signature(self.model_class.forward).parameters
            and all(mixer.continuous_inputs for mixer in mixers),
        }
        for key, value in derived.items():
            object.__setattr__(self, key, value)  # frozen: set once, here


ARCHITECTURES: dict[str, Architecture] = {}
"""Architecture name -> entry, filled by :func:`register_architecture`."""


def register_architecture(
    name: str, config_class: type, model_class: type, causal_lm_class: type, regression_class: type | None = None
) -> Architecture:
    """Add an architecture to the zoo and to the Auto classes.

    Its config registers with `AutoConfig` (under its `model_type`), the backbone with `AutoModel`, the language
    model with `AutoModelForCausalLM` and the regression model (if any) with `AutoModelForInContextRegression`;
    `train.py --architecture`, `config_for`, the reports and every registry-driven test then know it.

    Args:
        name: the public name; the config's `model_type` is `"icl_" + name` by convention.
        config_class: an `ICLConfig` subclass with its `PRESETS` (at least `tiny`, `small`, `base` for the shared
            tests; build them with `modeling.configuration.size_presets`).
        model_class, causal_lm_class, regression_class: the model shells (see any `architectures/<arch>/`).

    Raises:
        ValueError: the name or the config's `model_type` is taken.
    """
    if name in ARCHITECTURES:
        raise ValueError(f"architecture {name!r} is already registered")
    taken = [e.name for e in ARCHITECTURES.values() if e.config_class.model_type == config_class.model_type]
    if taken:
        raise ValueError(f"model_type={config_class.model_type!r} of {name!r} is already used by {taken[0]!r}")
    entry = Architecture(name, config_class, model_class, causal_lm_class, regression_class)
    AutoConfig.register(config_class.model_type, config_class)
    AutoModel.register(config_class, model_class)
    AutoModelForCausalLM.register(config_class, causal_lm_class)
    if regression_class is not None:
        AutoModelForInContextRegression.register(config_class, regression_class)
    ARCHITECTURES[name] = entry
    return entry


def list_architectures() -> list[str]:
    """Names accepted by `config_for` and `train.py --architecture`."""
    return sorted(ARCHITECTURES)


def architecture_of(config) -> Architecture:
    """The entry whose config class built `config` (by `model_type`).

    Raises:
        ValueError: `config` is not an hf_icl architecture's.
    """
    for entry in ARCHITECTURES.values():
        if entry.config_class.model_type == config.model_type:
            return entry
    raise ValueError(f"model_type={config.model_type!r} is not an hf_icl architecture")
