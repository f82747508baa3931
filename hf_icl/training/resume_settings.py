"""`--resume`: the saved run's settings as the base, the values given on top, and the training settings that
differ between two run configs (refused unless `--allow-changed-settings`)."""

from __future__ import annotations

import json
from dataclasses import fields

from ..tasks import list_tasks, run_task_options
from ..utils.validation import check_field_values, check_limits
from .layers import defaults_of, merge_layers, with_relative_min_lr
from .legacy import legacy_task_options
from .run_schema import RUN_LIMITS, RunArguments

RESUME_FIXED_FIELDS: tuple[str, ...] = ("task_preset", "weight_decay_on")
"""Run arguments a resume never changes besides :data:`~.checkpoints.RESUME_FIELDS` (the model and the data): the
preset's values are the saved run's already, and the parameter groups of the saved optimiser are fixed."""
BOOKKEEPING_FIELDS: tuple[str, ...] = (
    "output_dir", "resume", "overwrite", "allow_changed_settings", "threads", "report_to", "push_to_hub", "imports",
    "log_every", "checkpoint_every", "keep_checkpoints", "eval_batch_size", "eval_every",
)  # fmt: skip
"""Run arguments that do not change what is trained: a resume takes them as given, without a word."""


def training_settings(config: dict) -> dict:
    """The training settings of a run config: every `RunArguments` field but :data:`BOOKKEEPING_FIELDS`, with the
    task options resolved (a run saved with an old top-level task option compares equal to its new spelling)."""
    from .checkpoints import resolved_task_options

    known = {f.name for f in fields(RunArguments)} - set(BOOKKEEPING_FIELDS)
    resolved = resolved_task_options(config)
    return {name: json.loads(json.dumps(resolved[name], sort_keys=True, default=str)) for name in known & set(resolved)}


def setting_differences(saved: dict, current: dict) -> dict:
    """Field -> `(saved, current)` for every training setting the two run configs both hold and that differs."""
    recorded = set(saved) | ({"task_options"} if set(saved) & set(legacy_task_options()) else set())
    saved, current = training_settings(saved), training_settings(current)
    return {
        name: (saved[name], current[name])
        for name in recorded & set(saved) & set(current)
        if saved[name] != current[name]
    }


def resume_settings(args: RunArguments, given: dict) -> tuple[RunArguments, dict]:
    """The arguments of `--resume`: the saved run's settings, with the values given explicitly on top.

    A given value that differs from the saved one is refused, listing every difference, unless
    `--allow-changed-settings` (never for the fields that fix the model and the data). A folder without a marker
    (runs from before it) resumes with the given arguments, checked as before by `prepare_output_dir`.

    Returns:
        `(arguments, changes)`: changes maps each changed training setting to `(saved, new)`.

    Raises:
        ValueError: a damaged marker, or changed settings (naming them).
    """
    from .checkpoints import RESUME_FIELDS, RUN_MARKER, read_run_marker

    folder = args.resolved_output_dir()
    marker = read_run_marker(folder)
    if marker is None:
        return args, {}
    known = {f.name for f in fields(RunArguments)}
    saved = {key: value for key, value in marker["run_config"].items() if key in known}
    try:  # a bad saved value is the marker's fault, not that of a flag the user never passed
        check_field_values(RunArguments, saved)
        ranged = {name: RUN_LIMITS[name] for name in saved if name in RUN_LIMITS}
        check_limits(saved, ranged, dict.fromkeys(ranged, "--resume"))
    except ValueError as err:
        raise ValueError(
            f"argument --resume: {folder / RUN_MARKER} holds a bad saved setting "
            f"({str(err).removeprefix('argument --resume: ')}): restore it, or pass --overwrite to start the run again"
        ) from None
    legacy = {name: marker["run_config"][name] for name in legacy_task_options() if name in marker["run_config"]}
    if legacy and saved.get("task") in list_tasks():  # saved before they became task options
        saved["task_options"] = run_task_options(saved["task"], saved.get("task_options") or {}, legacy)
    base = {**defaults_of(), **saved}
    values = with_relative_min_lr(merge_layers([("given", given)], base=base, conflicts=False), base, given)
    resumed = RunArguments(**{**values, "output_dir": str(folder), "resume": True})
    changes = setting_differences(saved, resumed.to_dict())
    listed = "; ".join(f"{name}: saved {old!r}, now {new!r}" for name, (old, new) in sorted(changes.items()))
    fixed = sorted(set(changes) & {*RESUME_FIELDS, *RESUME_FIXED_FIELDS})
    if fixed:
        raise ValueError(
            f"argument --resume: the run in {folder} was started with other settings ({listed}); "
            f"{', '.join(fixed)} cannot change within a run: pass the saved values, or choose another --output-dir"
        )
    if changes and not args.allow_changed_settings:
        raise ValueError(
            f"argument --resume: the run in {folder} was started with other settings ({listed}); leave them out to "
            "continue with the saved ones, or pass --allow-changed-settings to continue with the new ones "
            "(metrics.json then records both)"
        )
    return resumed, changes
