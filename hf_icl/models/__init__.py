"""Architecture registry: every architecture is a config class plus thin model shells, registered with Auto*.

`ARCHITECTURES` maps the public architecture name (as used by `train.py --architecture`) to its classes.
"""

from __future__ import annotations

from dataclasses import fields

from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

from ..modeling.configuration import ICLConfig, check_choice
from .regular_gpt import ICLRegularGPTConfig, ICLRegularGPTForCausalLM, ICLRegularGPTModel
from .transformer import ICLTransformerConfig, ICLTransformerForCausalLM, ICLTransformerModel

ARCHITECTURES = {
    "transformer": (ICLTransformerConfig, ICLTransformerModel, ICLTransformerForCausalLM),
    "regular_gpt": (ICLRegularGPTConfig, ICLRegularGPTModel, ICLRegularGPTForCausalLM),
}


def _register() -> None:
    for config_cls, model_cls, lm_cls in ARCHITECTURES.values():
        AutoConfig.register(config_cls.model_type, config_cls)
        AutoModel.register(config_cls, model_cls)
        AutoModelForCausalLM.register(config_cls, lm_cls)


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
    config_cls = ARCHITECTURES[architecture][0]
    known = {f.name for f in fields(config_cls)}
    for key in overrides:
        if key not in known:
            allowed = ", ".join(sorted(known))
            raise ValueError(f"config field {key!r} is not a field of {config_cls.__name__}: {allowed}")
    return config_cls.from_preset(preset, **overrides)
