"""`ValidatedBuilder`, the base of every hf_icl builder, `RowBuilder`, and the config checks the builders share.

A `ValidatedBuilder` rejects a bad config before touching the cache and generates the three splits of
:data:`SPLITS`; a `RowBuilder` is one whose splits are streams of rows. :func:`check_counts` and
:func:`check_range` are the field checks every task's `validate_config` is made of, so the same mistake gives the
same message in every task.
"""

from __future__ import annotations

import copy
import zlib
from collections.abc import Iterator

import datasets
import numpy as np

from ..utils.validation import check_field_values

SPLITS: tuple[str, ...] = ("train", "validation", "test")
"""The splits every builder generates, in generation order."""

SPLIT_STREAMS: dict[str, int] = {"train": 0, "test": 1, "validation": 2}
"""Each split's index in its random stream (frozen: every cached dataset and committed result was drawn from it)."""


def split_stream(seed: int, split: str, name: str | None = None) -> list[int]:
    """The entropy of one split's random stream: ``[seed, crc32(name), s]``, or ``[seed, s]`` without a name.

    ``s`` is the split's index in :data:`SPLIT_STREAMS`; the name (a task or language) keeps tasks that share a
    seed apart. Callers append to the list for sub-streams (one per test length or block), so splits and
    sub-streams never overlap: ``np.random.default_rng(split_stream(seed, "test", "copy") + [length])``.
    """
    key = [] if name is None else [zlib.crc32(name.encode("ascii"))]
    return [seed, *key, SPLIT_STREAMS[split]]


class ValidatedBuilder(datasets.GeneratorBasedBuilder):
    """Base of the hf_icl builders: `validate_config(config)` runs as soon as the config is resolved.

    Subclasses set `validate_config` to a function that raises `ValueError` naming the field, the value and the
    allowed values, so bad overrides fail before any generation or cache directory exists.
    """

    validate_config = staticmethod(lambda config: None)
    SPLIT_SIZE_FIELDS: tuple[str, ...] = ()
    """Config fields that size a split: each must be >= 1, because `datasets` cannot store an empty split."""

    def _create_builder_config(self, config_name=None, custom_features=None, config_id=None, **config_kwargs):
        check_field_values(self.BUILDER_CONFIG_CLASS, {k: v for k, v in config_kwargs.items() if v is not None})
        config, config_id = super()._create_builder_config(config_name, custom_features, config_id, **config_kwargs)
        self.check_config(config)
        return config, config_id

    @classmethod
    def check_config(cls, config) -> None:
        """`validate_config`, then every split size >= 1; raises `ValueError` naming the field and the value."""
        cls.validate_config(config)
        for name in cls.SPLIT_SIZE_FIELDS:
            value = getattr(config, name)
            if value < 1:
                raise ValueError(f"{name}={value!r} is not allowed: expected an integer >= 1 (a split cannot be empty)")

    @classmethod
    def resolve_config(cls, config_name: str | None = None, **overrides):
        """The validated config a builder would use, without creating one (nothing touches the disk).

        Args:
            config_name: one of `BUILDER_CONFIGS` (default `DEFAULT_CONFIG_NAME`).
            **overrides: config field overrides (`None` values are ignored, as `datasets` does).

        Raises:
            ValueError: an unknown config name or field, or a value its field does not allow.
        """
        named = {config.name: config for config in cls.BUILDER_CONFIGS}
        config_name = config_name or cls.DEFAULT_CONFIG_NAME
        if config_name not in named:
            raise ValueError(f"config_name={config_name!r} is not one of: {', '.join(named)}")
        config = copy.deepcopy(named[config_name])
        overrides = {key: value for key, value in overrides.items() if value is not None}
        for key in overrides:
            if not hasattr(config, key):
                raise ValueError(f"{key!r} is not a field of {type(config).__name__}")
        check_field_values(type(config), overrides)
        for key, value in overrides.items():
            setattr(config, key, value)
        cls.check_config(config)
        return config

    def _split_generators(self, dl_manager):
        return [
            datasets.SplitGenerator(name=getattr(datasets.Split, split.upper()), gen_kwargs={"split": split})
            for split in SPLITS
        ]


class RowBuilder(ValidatedBuilder):
    """A builder whose splits are streams of rows from ``iter_rows(config, split)``.

    Subclasses set ``VERSION``, ``BUILDER_CONFIG_CLASS``, ``BUILDER_CONFIGS``, ``validate_config``, ``iter_rows``,
    ``FEATURES``, ``DESCRIPTION`` and ``CITATION``; the splits are :data:`SPLITS`.
    """

    FEATURES: datasets.Features
    DESCRIPTION = ""
    CITATION = ""
    iter_rows = staticmethod(lambda config, split: iter(()))

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(description=self.DESCRIPTION, features=self.FEATURES, citation=self.CITATION)

    def _generate_examples(self, split: str) -> Iterator:
        for i, row in enumerate(self.iter_rows(self.config, split)):
            yield datasets.builder.Key(0, i), row


def _is_integer(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def check_counts(config, names: tuple[str, ...]) -> None:
    """Raises ``ValueError`` unless every named field is an integer >= 0.

    Args:
        config: a builder config.
        names: field names.
    """
    for name in names:
        value = getattr(config, name)
        if not _is_integer(value) or value < 0:
            raise ValueError(f"{name}={value!r} is not allowed: expected an integer >= 0")


def check_range(config, low_name: str, high_name: str, lowest: int) -> None:
    """Raises ``ValueError`` unless ``lowest <= config.<low_name> <= config.<high_name>`` (integers).

    Args:
        config: a builder config.
        low_name, high_name: field names of the inclusive range.
        lowest: smallest allowed lower end.
    """
    lo, hi = getattr(config, low_name), getattr(config, high_name)
    if not (_is_integer(lo) and _is_integer(hi) and lowest <= lo <= hi):
        raise ValueError(f"{low_name}={lo!r}, {high_name}={hi!r} are not allowed: need {lowest} <= min <= max")
