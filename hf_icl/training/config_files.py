"""The `--config` YAML file of `train.py` (also a sweep's `config:`): its `RunArguments` fields, type- and
range-checked before anything else is read."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import yaml

from ..block_features.feature_registry import feature_options, parse_feature_option
from ..utils.strict_yaml import read_yaml  # strict: no duplicate keys, alias bombs or malformed numbers
from ..utils.validation import check_field_values, check_limits, naming
from .legacy import legacy_task_options
from .run_schema import RUN_LIMITS, RunArguments


def load_yaml_config(path: Path) -> dict:
    """The `RunArguments` fields of a YAML file, type-checked; errors name `--config`, the field and the value."""
    if not path.is_file():
        raise ValueError(f"argument --config: {str(path)!r} is not a file")
    try:
        values = read_yaml(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise ValueError(f"argument --config: {str(path)!r} is not valid YAML ({err})") from None
    values = {} if values is None else values
    if not isinstance(values, dict):
        raise ValueError(f"argument --config: {str(path)!r} holds a {type(values).__name__}, expected a mapping of "
                         "RunArguments fields")
    legacy = legacy_task_options()
    known = {f.name for f in fields(RunArguments)} | set(legacy)
    for key in values:
        if key not in known:
            raise ValueError(f"argument --config: field {key!r} is not one of: {', '.join(sorted(known))}")
    overrides = values.get("overrides")
    for name in feature_options() if isinstance(overrides, dict) else ():  # a block feature's flag syntax
        if name in overrides:
            try:
                overrides = values["overrides"] = {**overrides, name: parse_feature_option(name, overrides[name])}
            except ValueError as err:
                raise ValueError(f"argument --config: overrides.{name} {err}") from None
    with naming("--config"):
        fields_only = {key: value for key, value in values.items() if key not in legacy}
        check_field_values(RunArguments, fields_only)
    ranged = [name for name in values if name in RUN_LIMITS]
    check_limits(values, {name: RUN_LIMITS[name] for name in ranged}, dict.fromkeys(ranged, "--config"))
    return values
