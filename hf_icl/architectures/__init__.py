"""The architecture zoo: one folder per architecture, each registering itself (see `registry`).

`architectures/<arch>/` holds `configuration_<arch>.py` (the config class: defaults, presets, docs),
`modeling_<arch>.py` (thin model shells over the shared skeleton in `hf_icl.modeling`) and an `__init__.py` whose
`register_architecture(...)` call adds it to `ARCHITECTURES` and the Auto classes. This package imports every
subfolder, so a new architecture folder is all it takes; outside code calls `hf_icl.register_architecture`.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import fields

from ..block_features.feature_registry import feature_fields
from ..mixers.registry import all_fields, fields_of
from ..modeling.configuration import ICLConfig, check_choice
from ..utils.validation import (
    FRACTION,
    NON_NEGATIVE_NUMBER,
    OPTIONAL_POSITIVE_INT,
    POSITIVE_NUMBER,
    Limit,
    check_field_values,
    describe_type,
    is_of_type,
)
from .auto import AutoModelForInContextRegression
from .registry import ARCHITECTURES, Architecture, architecture_of, list_architectures, register_architecture

for _module in pkgutil.iter_modules(__path__):
    if _module.ispkg:
        importlib.import_module(f"{__name__}.{_module.name}")

CONFIG_LIMITS: dict[str, Limit] = {
    "dropout": FRACTION,
    "attention_dropout": FRACTION,
    "layer_norm_epsilon": POSITIVE_NUMBER,
    "rope_theta": POSITIVE_NUMBER,
    "initializer_range": NON_NEGATIVE_NUMBER,
    "intermediate_size": OPTIONAL_POSITIVE_INT,
    "input_dim": OPTIONAL_POSITIVE_INT,
    "output_dim": OPTIONAL_POSITIVE_INT,
}
"""Ranges of the shared config fields whose type alone lets nonsense through (`dropout=2.0`, `rope_theta=0`); the
sizes every other field derives from are checked by the config itself (`ICLConfig.check_sizes`)."""


def config_for(architecture: str, preset: str = "tiny", **overrides) -> ICLConfig:
    """Build the config of `architecture` at a size `preset`, with field overrides (e.g. `vocab_size=20`).

    Args:
        architecture (`str`): one of `list_architectures()`.
        preset (`str`): a size preset of that architecture (`tiny`, `small`, `base`, ...).
        **overrides: config fields: the shared ones, the architecture's own, and those of the mixers the config
            uses; an unknown name raises `ValueError` listing the valid ones, a value of the wrong type or range
            (:data:`CONFIG_LIMITS`: dropout in [0, 1), positive sizes, ...) raises naming the field.
    """
    check_choice("architecture", architecture, list_architectures())
    config_cls = ARCHITECTURES[architecture].config_class
    declared = {f.name for f in fields(config_cls)}
    mixer_fields = {**all_fields(), **feature_fields()}  # block features' fields are on every config
    former = {name: field.name for field in mixer_fields.values() for name in field.former_names}
    for key in overrides:
        if key not in declared and key not in mixer_fields and key not in former:
            allowed = ", ".join(sorted(declared | set(mixer_fields)))
            raise ValueError(f"config field {key!r} is not a field of {config_cls.__name__} or of any mixer: {allowed}")
    check_field_values(config_cls, overrides)  # a value of the wrong type fails here, not inside the model
    for key, value in overrides.items():
        field = mixer_fields.get(former.get(key, key))
        if field is not None and key not in declared and value is not None and field.value_type is not None:
            if not is_of_type(value, field.value_type):
                raise ValueError(f"{key}={value!r} is not allowed: expected {describe_type(field.value_type)}")
    config = config_cls.from_preset(preset, **overrides)
    for key, limit in CONFIG_LIMITS.items():
        value = getattr(config, key, None)
        if hasattr(config, key) and not limit.allows(value):
            raise ValueError(f"{key}={value!r} is not allowed: expected {limit.describe()}")
    used = fields_of(config.mixer_types)
    unused = [key for key in overrides if key not in declared and former.get(key, key) not in used]
    unused = [key for key in unused if key not in feature_fields()]
    if unused:
        raise ValueError(
            f"config field {unused[0]!r} is read by no mixer of this {architecture} config (mixers: "
            f"{', '.join(dict.fromkeys(config.mixer_types))}); their fields: {', '.join(sorted(used)) or 'none'}"
        )
    return config


def non_embedding_parameters(model) -> int:
    """Parameters outside the token/position embeddings and the output projection (the size presets match this)."""
    skipped = ("embed_tokens", "embed_positions", "lm_head")
    return sum(p.numel() for name, p in model.named_parameters() if not any(part in name for part in skipped))


__all__ = [
    "ARCHITECTURES",
    "Architecture",
    "AutoModelForInContextRegression",
    "architecture_of",
    "config_for",
    "list_architectures",
    "non_embedding_parameters",
    "register_architecture",
]
