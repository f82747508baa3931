"""`train.py`'s arguments: :func:`parse_run` reads the command line and the `--config` file, layers them over the
task family's defaults, resolves a resume and checks every value before any work starts.

Each job has its own module, whose public names are importable from here as well: the fields and their ranges
(:mod:`.run_schema`), the flags (:mod:`.run_parser`), the layers (:mod:`.layers`), the `--config` file
(:mod:`.config_files`), `--resume` (:mod:`.resume_settings`), old spellings (:mod:`.legacy`) and the checks
(:mod:`.run_checks`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..plugins import preload
from ..tasks import family_of, list_tasks
from ..utils.strict_yaml import read_yaml
from .config_files import load_yaml_config
from .layers import MERGED_FIELDS, SUPERSEDES, defaults_of, merge_layers, task_layers, with_relative_min_lr
from .legacy import legacy_task_option, legacy_task_options, move_legacy_task_options
from .resume_settings import (
    BOOKKEEPING_FIELDS,
    RESUME_FIXED_FIELDS,
    resume_settings,
    setting_differences,
    training_settings,
)
from .run_checks import check_given, validate
from .run_parser import build_parser, command_line_values, feature_flags, flag_of_field, option_type, topic_help
from .run_schema import BATCHING, DECAY_GROUPS, MIXED_PRECISION, REPORT_TO, RUN_CHOICES, RUN_LIMITS, RunArguments
from .shared_overrides import with_shared_overrides

__all__ = [
    "BARE_RUN_CHOICES", "BATCHING", "BOOKKEEPING_FIELDS", "DECAY_GROUPS", "MERGED_FIELDS", "MIXED_PRECISION",
    "ParsedRun", "REPORT_TO", "RESUME_FIXED_FIELDS", "RUN_CHOICES", "RUN_LIMITS", "RunArguments", "SUPERSEDES",
    "build_parser", "check_given", "command_line_values", "defaults_of", "feature_flags", "flag_of_field",
    "legacy_task_option", "legacy_task_options", "load_yaml_config", "merge_layers", "move_legacy_task_options",
    "option_type", "parse_args", "parse_run", "read_yaml", "resume_settings", "setting_differences", "task_layers",
    "topic_help", "training_settings", "validate", "with_relative_min_lr",
]  # fmt: skip


def parse_args(argv: list[str] | None = None) -> RunArguments:
    """Parse and validate; errors name the field, the value and the allowed values.

    Plug-ins named by `--import` (or a `--config` file's `imports:`) are imported first, so their architectures and
    tasks are valid choices. With `--resume`, the saved run's settings are the base (see :func:`parse_run`).
    """
    return parse_run(argv).args


@dataclass
class ParsedRun:
    """What `train.py`'s command line asks for.

    Args:
        args: the run's arguments, validated.
        given: the values given explicitly (a `--config` file, then the command line, merged).
        changes: with `--resume --allow-changed-settings`, field -> `(saved value, new value)` for every training
            setting that differs from the saved run's.
    """

    args: RunArguments
    given: dict
    changes: dict = field(default_factory=dict)


BARE_RUN_CHOICES = frozenset({"task", "architecture", "task_preset"})
"""The run choices whose absence (with no `--config` either) makes a run bare: it gets the default task family's
`quickstart_preset` (RegBench's: the 4-layer RoPE recipe with P1's n-gram heads, 500 steps)."""


def parse_run(argv: list[str] | None = None) -> ParsedRun:
    """Parse `train.py`'s arguments in the order of precedence, validate them, and resolve a resume.

    The layers are: the dataclass defaults, the task family's `run_defaults`, the `--task-preset`, the `--config`
    file, the command line (:func:`merge_layers`). A value given explicitly (config file or command line) is never
    replaced by a default. A bare run (no `--config`, `--task`, `--architecture` or `--task-preset`) takes the
    default task family's `quickstart_preset` as its task preset (:data:`BARE_RUN_CHOICES`). With `--resume`, the
    saved run's settings replace the three layers of defaults (:func:`resume_settings`).
    """
    preload(argv)
    namespace = vars(build_parser(topic_help(argv)).parse_args(argv))
    config_path = namespace.pop("config")
    layers = [("--config", load_yaml_config(Path(config_path)))] if config_path else []
    layers.append(("command line", command_line_values(namespace)))
    given = merge_layers(layers)
    move_legacy_task_options(given, layers)
    task, preset = given.get("task", RunArguments.task), given.get("task_preset")
    if preset is None and not config_path and not set(given) & BARE_RUN_CHOICES and task in list_tasks():
        preset = family_of(task).quickstart_preset  # a bare `train.py`: the default task's quickstart
    defaults = merge_layers(task_layers(task, preset), base=defaults_of())
    if preset is not None:
        defaults["task_preset"] = preset  # recorded in the run config, so the run says what it ran
    values = merge_layers([("given", given)], base=defaults, conflicts=False)
    args = RunArguments(**with_relative_min_lr(values, defaults, given))
    changes: dict = {}
    if args.resume:
        args, changes = resume_settings(args, given)
    check_given(args, given)
    validate(args)  # the explicit overrides first: a shared override is tried on a valid config
    args = with_shared_overrides(args)
    return ParsedRun(args, given, changes)
