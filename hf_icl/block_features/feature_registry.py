"""The block-feature registry: units that wrap or extend the decoder's blocks, each declaring itself in its own file.

A block feature is what a paper adds at the level of a block rather than of a token mixer: P1's n-gram heads (blocks
placed into the stack), P3's slow/fast streams (a second stream inside each block). It is a `BlockFeature`
subclass registered with `@register_block_feature`; every hook has a default that does nothing:

    @register_block_feature("my_feature", config_fields=(ConfigField("my_feature", None, "where ..."),))
    class MyFeature(BlockFeature):
        selector = "my_feature"     # the config field that turns it on (else: `config.block_features` names it)
        continuous_inputs = False   # refused with `inputs_embeds`-only models, for the reason in `needs_token_ids`
        option = FeatureOption(...) # a `train.py` flag with its own syntax for the selector
        block_class = None          # `(config, layer_idx) -> block` of the L regular layers, replacing the default
        def check_config(config): ...               # cross-field checks, run by `ICLConfig.check`
        def place_layers(config, plan): ...         # edit the layer plan (see `place_layers`)
        def extend_layer(config, layer, index): ... # add modules to each regular layer once it is built
        def call_context(config): ...               # fresh per-forward entries of the block context
        def label(value): ...                       # run-folder suffix for the selector's value

The skeleton (`hf_icl.modeling`) calls these hooks through `used_block_features(config)` and never names a feature;
a config gets, as flat attributes, the fields of every registered feature (so any config can turn one on). This
module imports only the mixer registry's `ConfigField`, so it ships with exported checkpoints
(`modeling.remote_code`), where only the features a checkpoint uses are shipped and registered.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from ..mixers.registry import ConfigField


@dataclasses.dataclass(frozen=True)
class FeatureOption:
    """A command-line flag that sets a feature's selector field in a syntax of its own (`train.py`, sweeps, files).

    Args:
        flag: the flag, e.g. `--ngram-heads`; repeatable, the parsed values are concatenated.
        parse: `text -> value` of the field; raises `ValueError` whose message names the wrong part of `text`.
        metavar: the flag's argument in `--help`.
        help: the flag's `--help` line.
    """

    flag: str
    parse: Callable[[str], list]
    metavar: str
    help: str


class BlockFeature:
    """The hooks of a block feature (subclass it; a hook left alone does nothing).

    Class attributes:
        name: set by `register_block_feature`.
        config_fields: set by `register_block_feature`: the fields it declares, by name.
        selector: the config field whose truthy value turns the feature on; `None`: the feature is on where the
            config class lists it in `block_features` (an architecture built on it).
        continuous_inputs: the feature works on `inputs_embeds` alone.
        needs_token_ids: why it does not (for error messages), when `continuous_inputs` is False.
        edits_layer_stack: `place_layers` adds or removes layers, so only configs whose `plain_layer_stack` is True
            (the blocks run once each, in order) accept it.
        option: a `train.py` flag for the selector, or `None`.
        block_class: `(config, layer_idx) -> nn.Module`, the class of the L regular layers, or `None`.
        requirement: what `accepts` asks of an architecture, in words (error messages).
    """

    name: ClassVar[str] = ""
    config_fields: ClassVar[Mapping[str, ConfigField]] = MappingProxyType({})
    selector: ClassVar[str | None] = None
    continuous_inputs: ClassVar[bool] = True
    needs_token_ids: ClassVar[str] = ""
    edits_layer_stack: ClassVar[bool] = False
    option: ClassVar[FeatureOption | None] = None
    block_class: ClassVar[type | None] = None
    requirement: ClassVar[str] = "a layer schedule that is a fixed stack (`plain_layer_stack`)"  # what `accepts` asks

    @classmethod
    def used_by(cls, config) -> bool:
        """Whether `config` turns the feature on."""
        if cls.selector is not None:
            return bool(getattr(config, cls.selector, None))
        return cls.name in getattr(config, "block_features", ())

    @classmethod
    def accepts(cls, config_class) -> bool:
        """Whether configs of `config_class` (an `ICLConfig` subclass) may turn the feature on (tables, docs, help):
        by default every class, except that a feature that edits the layer stack needs `plain_layer_stack`."""
        return config_class.plain_layer_stack or not cls.edits_layer_stack

    @classmethod
    def check_config(cls, config) -> None:
        """Checks across fields, run by `ICLConfig.check` on every config (used or not); raise `ValueError`."""

    @classmethod
    def place_layers(cls, config, plan: list[Callable[[int], Any]]) -> list[Callable[[int], Any]]:
        """The layer plan with this feature's layers placed.

        Args:
            config: the model config.
            plan: one builder per layer, in order: `builder(slot) -> nn.Module`, where `slot` is a free cache slot
                (the L regular layers' builders ignore it and use their index). The skeleton calls the builders in
                the final order, handing out slots L, L + 1, ... to the builders after the regular ones.
        """
        return plan

    @classmethod
    def extend_layer(cls, config, layer, index: int) -> None:
        """Add modules to regular layer `index` (0 ≤ index < L) once it is built, e.g. a transform a mixer calls
        (`mixers.ops.value_transform`); their weights are the layer's, saved and loaded with it."""

    @classmethod
    def call_context(cls, config) -> dict:
        """Entries the model adds to the block context at every forward call, made fresh for each call (state the
        layers of one call share, e.g. the first layer's values); keys must not collide with other features'."""
        return {}

    @classmethod
    def label(cls, value) -> str:
        """A short suffix for the architecture in run-folder names, e.g. `+ngh1.123`; "" for none."""
        return ""


BLOCK_FEATURES: dict[str, type[BlockFeature]] = {}
"""Feature name -> its `BlockFeature` subclass, for every registered feature."""


def register_block_feature(name: str, feature: type | None = None, *, config_fields: tuple[ConfigField, ...] = ()):
    """Register a block feature under `name`; usable as a class decorator.

    Args:
        name: the feature's name (`config.block_features`, error messages, tables).
        feature: the `BlockFeature` subclass (omit it to decorate).
        config_fields: the config fields it declares (set on every config, with their defaults).

    Raises:
        ValueError: the name is taken, the class is no `BlockFeature`, or a field is declared twice.
    """

    def register(cls: type) -> type:
        if name in BLOCK_FEATURES:
            raise ValueError(f"block feature {name!r} is already registered (by {BLOCK_FEATURES[name].__qualname__})")
        if not (isinstance(cls, type) and issubclass(cls, BlockFeature)):
            raise ValueError(f"block feature {name!r} must be a BlockFeature subclass, got {cls!r}")
        taken = feature_fields()
        for field in config_fields:
            if field.name in taken:
                raise ValueError(f"block feature {name!r} declares config field {field.name!r}, already declared")
        cls.name = name
        cls.config_fields = MappingProxyType({field.name: field for field in config_fields})
        if cls.selector is not None and cls.selector not in cls.config_fields:
            raise ValueError(f"block feature {name!r}: selector {cls.selector!r} is not one of its config fields")
        BLOCK_FEATURES[name] = cls
        return cls

    return register(feature) if feature is not None else register


def unregister_block_feature(name: str) -> None:
    """Remove a feature registered with :func:`register_block_feature` (tests, plug-ins)."""
    BLOCK_FEATURES.pop(name)


def block_feature(name: str) -> type[BlockFeature]:
    """The registered feature `name`.

    Raises:
        ValueError: naming the feature and the registered ones.
    """
    if name not in BLOCK_FEATURES:
        raise ValueError(f"block feature {name!r} is not one of: {', '.join(sorted(BLOCK_FEATURES)) or 'none'}")
    return BLOCK_FEATURES[name]


def list_block_features() -> list[str]:
    """The registered feature names."""
    return sorted(BLOCK_FEATURES)


def feature_fields() -> dict[str, ConfigField]:
    """Every config field a registered feature declares, by name."""
    return {name: field for cls in BLOCK_FEATURES.values() for name, field in cls.config_fields.items()}


def used_block_features(config) -> list[type[BlockFeature]]:
    """The features `config` turns on, in registration order."""
    return [cls for cls in BLOCK_FEATURES.values() if cls.used_by(config)]


def feature_call_context(config) -> dict:
    """The per-call block-context entries of the features `config` uses (`BlockFeature.call_context`).

    Raises:
        ValueError: two features give the same key.
    """
    context: dict = {}
    for cls in used_block_features(config):
        entries = cls.call_context(config)
        taken = sorted(set(entries) & set(context))
        if taken:
            raise ValueError(f"block feature {cls.name!r} gives block-context key {taken[0]!r}, already given")
        context.update(entries)
    return context


def features_label(overrides: Mapping | None) -> str:
    """The run-folder suffix of the features that config `overrides` (field -> value) select, e.g. `+ngh1.123`."""
    overrides = overrides or {}
    return "".join(cls.label(overrides[cls.selector]) for cls in BLOCK_FEATURES.values() if overrides.get(cls.selector))


def feature_options() -> dict[str, FeatureOption]:
    """The command-line options of the registered features, by the config field each sets (its `selector`)."""
    return {cls.selector: cls.option for cls in BLOCK_FEATURES.values() if cls.option is not None and cls.selector}


def parse_feature_option(field: str, value):
    """A selector field's value as given in a file or a sweep: a string in its option's syntax is parsed, anything
    else (a list, `None`) is returned as it is.

    Raises:
        ValueError: the string does not parse (the message names the wrong part, not the field).
    """
    option = feature_options().get(field)
    return option.parse(value) if option is not None and isinstance(value, str) else value
