"""Old spellings of run arguments: the top-level run arguments that became task options, still read from the command
line, `--config` files and saved runs, with a `FutureWarning`, until the release after next."""

from __future__ import annotations

import json
import warnings

from ..tasks import FAMILIES, TaskOption, family_of, list_tasks
from .run_schema import RunArguments


def legacy_options() -> dict[str, tuple[TaskOption, list[str]]]:
    """Task option name -> `(option, the families that declare it)` for every option a registered family declares
    with a `legacy_flag` (a run argument before it became a task option)."""
    declared: dict[str, tuple[TaskOption, list[str]]] = {}
    for family in FAMILIES.values():
        for option in family.training_options:
            if option.legacy_flag is not None:
                declared.setdefault(option.name, (option, []))[1].append(family.name)
    return declared


def legacy_task_options() -> dict[str, str]:
    """Run arguments that became task options (`TaskOption.legacy_flag`), with their old flag: the old config key
    and flag still set the task option, with a `FutureWarning`, until the release after next."""
    return {name: option.legacy_flag for name, (option, _) in legacy_options().items()}


def move_legacy_task_options(given: dict, layers: list[tuple[str, dict]]) -> None:
    """Turn the old top-level run arguments that became task options (:func:`legacy_task_options`) into task
    options of `given`, with a `FutureWarning`; a task option given explicitly in any layer wins."""
    explicit = {key for _, layer in layers for key in (layer.get("task_options") or {})}
    for name in legacy_task_options():
        if name in given:
            value = given.pop(name)
            given["task_options"] = {**given.get("task_options", {}), **legacy_task_option(given, name, value,
                                                                                            explicit)}  # fmt: skip
            if not given["task_options"]:
                del given["task_options"]


def legacy_task_option(values: dict, name: str, value, explicit: set[str]) -> dict:
    """`{name: value}` for the task options of a run that set the old run argument `name` (with a `FutureWarning`):
    empty where an explicit task option sets it too, or where the run's task has no such option (runs of other tasks
    ignored the old argument)."""
    warnings.warn(
        f"{legacy_task_options()[name]} and the config key {name!r} are deprecated and will be removed in the release "
        f"after next: use --task-option {name}={json.dumps(value)} (config files: task_options: {{{name}: "
        f"{json.dumps(value)}}})",
        FutureWarning,
        stacklevel=3,
    )
    task = values.get("task", RunArguments.task)
    declared = task in list_tasks() and name in {option.name for option in family_of(task).training_options}
    return {name: value} if declared and name not in explicit else {}
