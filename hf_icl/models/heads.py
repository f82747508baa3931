"""Model heads a task family can ask for: build a model for a config and load one from a checkpoint folder.

- ``causal_lm``: the architecture's ``...ForCausalLM`` through ``AutoModelForCausalLM`` (generation, pipelines);
- ``regression``: the architecture's ``...ForRegression`` (continuous read-in and read-out, DESIGN §2.1).
"""

from __future__ import annotations

from pathlib import Path

from transformers import AutoConfig, AutoModelForCausalLM


def architecture_of(config):
    """The registry entry whose config class built `config` (by `model_type`)."""
    from . import ARCHITECTURES

    for entry in ARCHITECTURES.values():
        if entry.config_class.model_type == config.model_type:
            return entry
    raise ValueError(f"model_type={config.model_type!r} is not an hf_icl architecture")


def _regression_class(config):
    entry = architecture_of(config)
    if entry.regression_class is None:
        raise ValueError(f"architecture {entry.name!r} has no regression head (continuous inputs)")
    return entry.regression_class


def build_model(head: str, config):
    """A freshly initialised model with `head` for `config`."""
    if head == "causal_lm":
        return AutoModelForCausalLM.from_config(config)
    if head == "regression":
        return _regression_class(config)(config)
    raise ValueError(f"head={head!r} is not one of: causal_lm, regression")


def load_model(head: str, folder: str | Path):
    """The model with `head` saved in `folder` (a `save_pretrained` folder)."""
    if head == "causal_lm":
        return AutoModelForCausalLM.from_pretrained(folder)
    if head == "regression":
        return _regression_class(AutoConfig.from_pretrained(folder)).from_pretrained(folder)
    raise ValueError(f"head={head!r} is not one of: causal_lm, regression")
