"""Layered run settings: dataclass defaults < task family defaults < task preset < `--config` file < command line,
merged field by field (:func:`merge_layers`)."""

from __future__ import annotations

import copy

from ..modeling.configuration import check_choice
from ..tasks import family_of, list_tasks
from ..utils.validation import naming
from .run_parser import flag_of_field
from .run_schema import RunArguments


def with_relative_min_lr(values: dict, base: dict, given: dict) -> dict:
    """`values` with a `min_lr` that keeps `base`'s ratio to `lr` when `lr` is given and `min_lr` is not (a lower
    `--lr` never falls below a default final rate)."""
    if "lr" in given and "min_lr" not in given and base.get("lr"):
        values = {**values, "min_lr": base["min_lr"] * given["lr"] / base["lr"]}
    return values

SUPERSEDES: dict[str, tuple[str, str]] = {
    "max_steps": ("epochs", "the length of the run"),
    "warmup_steps": ("warmup_ratio", "the length of the warm-up"),
}
"""Pairs of run fields that set one thing: the first, when set (not `None`), decides what the second would. A layer
that gives the second without the first unsets the first of the layers below it (`--epochs 1` wins over a family's
default `max_steps`); one layer that gives both is a conflict."""
MERGED_FIELDS = ("overrides", "shared_overrides", "task_options", "aux_loss_weights")
"""Mapping fields merged key by key across layers (a `--config` file's `task_options` keep the family's others)."""


def merge_layers(layers: list[tuple[str, dict]], base: dict | None = None, conflicts: bool = True) -> dict:
    """The run-argument values of `layers` (lowest first) on top of `base`.

    A later layer's value replaces an earlier one's, except: mapping fields (:data:`MERGED_FIELDS`) merge key by
    key, `imports` add up, and a layer giving one of a pair of :data:`SUPERSEDES` unsets the other of the layers
    below. `conflicts=False` merges layers merged already, where both fields of a pair may come from different
    layers with the higher one's choice made (the other unset, or deciding nothing).

    Raises:
        ValueError: one layer gives both fields of a :data:`SUPERSEDES` pair, naming both.
    """
    merged = copy.deepcopy(base or {})
    for label, layer in layers:
        for first, (second, what) in SUPERSEDES.items():
            if conflicts and layer.get(first) is not None and second in layer:
                flags = flag_of_field(first), flag_of_field(second)
                both = f"{first}={layer[first]!r} ({flags[0]}) and {second}={layer[second]!r} ({flags[1]})"
                where = "--config: the file" if label == "--config" else f"{flags[0]}: the command line"
                raise ValueError(f"argument {where} gives both {both}, which both set {what}: give one of them")
            if second in layer and first not in layer:
                merged[first] = None
        for key, value in copy.deepcopy(layer).items():
            if key in MERGED_FIELDS and isinstance(value, dict) and isinstance(merged.get(key), dict):
                merged[key] = {**merged[key], **value}
            elif key == "imports" and isinstance(value, list) and isinstance(merged.get(key), list):
                merged[key] = list(dict.fromkeys([*merged[key], *value]))
            else:
                merged[key] = value
    return merged


def defaults_of() -> dict:
    """The dataclass defaults of every run argument."""
    return RunArguments().to_dict()


def task_layers(task: str, preset: str | None) -> list[tuple[str, dict]]:
    """The run-argument defaults of `task`'s family, then its named `preset`, as layers of :func:`merge_layers`."""
    with naming("--task"):
        check_choice("task", task, list_tasks())
    family = family_of(task)
    layers = [("task family", dict(family.run_defaults))]
    if preset is not None:
        with naming("--task-preset"):
            check_choice("task_preset", preset, sorted(family.presets))
        layers.append(("task preset", dict(family.presets[preset])))
    return layers
