"""Model heads a task family can ask for: how to build a model for a config, and load one from a folder.

- ``causal_lm``: the architecture's ``...ForCausalLM`` through ``AutoModelForCausalLM`` (generation, pipelines);
- ``regression``: the architecture's ``...ForRegression`` (continuous read-in and read-out, DESIGN §2.1).

A family names its head (`TaskFamily.head`); a new kind of head is one `register_head` call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from transformers import AutoConfig, AutoModelForCausalLM

from ..modeling.configuration import check_choice
from .registry import architecture_of


@dataclass(frozen=True)
class ModelHead:
    """How one head builds and loads models.

    Args:
        name: the name families use (`TaskFamily.head`).
        build: `config -> model`, freshly initialised.
        load: `folder -> model`, a `save_pretrained` folder loaded with this head.
    """

    name: str
    build: Callable[[object], object]
    load: Callable[[str | Path], object]


HEADS: dict[str, ModelHead] = {}


def register_head(head: ModelHead) -> ModelHead:
    """Make a head available to task families (`TaskFamily.head`).

    Raises:
        ValueError: the name is taken.
    """
    if head.name in HEADS:
        raise ValueError(f"model head {head.name!r} is already registered")
    HEADS[head.name] = head
    return head


def _regression_class(config) -> type:
    entry = architecture_of(config)
    if entry.regression_class is None:
        raise ValueError(f"architecture {entry.name!r} has no regression head (continuous inputs)")
    return entry.regression_class


def _load_regression(folder):
    return _regression_class(AutoConfig.from_pretrained(folder)).from_pretrained(folder)


register_head(ModelHead("causal_lm", AutoModelForCausalLM.from_config, AutoModelForCausalLM.from_pretrained))
register_head(ModelHead("regression", lambda config: _regression_class(config)(config), _load_regression))


def build_model(head: str, config):
    """A freshly initialised model with `head` for `config`."""
    check_choice("head", head, sorted(HEADS))
    return HEADS[head].build(config)


def load_model(head: str, folder: str | Path):
    """The model with `head` saved in `folder` (a `save_pretrained` folder)."""
    check_choice("head", head, sorted(HEADS))
    return HEADS[head].load(folder)
