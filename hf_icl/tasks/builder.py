"""`ValidatedBuilder`, the base of every hf_icl builder, and the config checks the builders share.

A `ValidatedBuilder` rejects a bad config before touching the cache and generates the three splits of
:data:`SPLITS`. :func:`check_counts` and :func:`check_range` are the field checks every task's `validate_config`
is made of, so the same mistake gives the same message in every task.
"""

from __future__ import annotations

import datasets
import numpy as np

SPLITS: tuple[str, ...] = ("train", "validation", "test")
"""The splits every builder generates, in generation order."""


class ValidatedBuilder(datasets.GeneratorBasedBuilder):
    """Base of the hf_icl builders: `validate_config(config)` runs as soon as the config is resolved.

    Subclasses set `validate_config` to a function that raises `ValueError` naming the field, the value and the
    allowed values, so bad overrides fail before any generation or cache directory exists.
    """

    validate_config = staticmethod(lambda config: None)

    def _create_builder_config(self, *args, **kwargs):
        config, config_id = super()._create_builder_config(*args, **kwargs)
        self.validate_config(config)
        return config, config_id

    def _split_generators(self, dl_manager):
        return [
            datasets.SplitGenerator(name=getattr(datasets.Split, split.upper()), gen_kwargs={"split": split})
            for split in SPLITS
        ]


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
