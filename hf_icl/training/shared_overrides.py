"""Shared overrides: one study setting for several architectures, applied where an architecture reads it.

`--override position_embedding=rope` on Mamba changes nothing, so it is refused
(:func:`~hf_icl.modeling.configuration.unread_override`). A study that compares architectures under one recipe
(a sweep over `architecture`, a `--config` file used with `--architecture`) declares such settings shared instead:
`--shared-override FIELD=VALUE` (config key `shared_overrides`, sweep key `shared_override.FIELD`). Each is added to
the run's `overrides` when the architecture reads the field (its config class or one of its mixers declares it, and
some mixer applies the value) and left out otherwise, with one log line; an explicit `--override` of the same field
wins. The run config keeps both, so a run says what it was given and what it applied.
"""

from __future__ import annotations

import dataclasses
import logging

from ..architectures import ARCHITECTURES, config_for
from ..mixers.registry import all_fields, fields_of
from ..modeling.configuration import unread_override

logger = logging.getLogger(__name__)


def reads_override(architecture: str, preset: str, overrides: dict, field: str, value) -> bool:
    """Whether `architecture` (at `preset`, with the valid `overrides`) reads `field` set to `value`.

    Raises:
        ValueError: the architecture reads the field but `value` is not allowed, naming the field.
    """
    config = config_for(architecture, preset, **overrides)
    if field not in vars(config) and field not in fields_of(config.mixer_types):  # neither the skeleton's nor a mixer's
        return False
    trial = config_for(architecture, preset, **{**overrides, field: value})
    return unread_override(trial, {field: value}, architecture) is None


def known_fields() -> set[str]:
    """Every config field some architecture or mixer declares (a shared override names one of them)."""
    declared = {f.name for entry in ARCHITECTURES.values() for f in dataclasses.fields(entry.config_class)}
    return declared | set(all_fields())


def with_shared_overrides(args):
    """`args` (a `RunArguments`) with each shared override the architecture reads merged into `overrides`.

    Raises:
        ValueError: a shared value the architecture reads but does not allow, named as `--shared-override`.
    """
    applied, left_out = {}, []
    unknown = sorted(set(args.shared_overrides) - known_fields())
    if unknown:
        raise ValueError(f"argument --shared-override: config field {unknown[0]!r} is not a field of any architecture "
                         f"or mixer: {', '.join(sorted(known_fields()))}")  # fmt: skip
    for field, value in args.shared_overrides.items():
        explicit = {key: v for key, v in args.overrides.items() if key != field}  # its value is checked all the same
        try:
            reads = reads_override(args.architecture, args.preset, {**explicit, **applied}, field, value)
        except (ValueError, TypeError) as err:
            raise ValueError(f"argument --shared-override: {err}") from None
        if field in args.overrides:
            continue  # an explicit --override wins
        if reads:
            applied[field] = value
        else:
            left_out.append(f"{field}={value!r}")
    if left_out:
        logger.info("shared overrides left out (no mixer of %s reads them): %s", args.architecture, ", ".join(left_out))
    if not applied:
        return args
    return dataclasses.replace(args, overrides={**args.overrides, **applied})
