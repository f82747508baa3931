"""Task registry: every task belongs to one :class:`~hf_icl.tasks.family.TaskFamily`, registered once.

Builder-backed tasks are ``datasets.GeneratorBasedBuilder`` subclasses (DESIGN §2.2). Dataset scripts are gone in
datasets >= 4, so builders are instantiated from the package:
``builder = Builder(config_name=..., **overrides); builder.download_and_prepare(); builder.as_dataset()``;
:func:`load_task` wraps exactly that. Add a family with one file in ``families/`` and one :func:`register_family`
line below (or call :func:`register_family` from your own code).
"""

from __future__ import annotations

from . import copying, phonebook, recall  # noqa: F401  (public modules, as before the family registry)
from .families import formal_language, generation, icl_arithmetic, regbench, text_lm, text_mixture
from .families.function_classes import FAMILIES as FUNCTION_CLASS_FAMILIES
from .families.generation import GENERATION_TASKS
from .family import (
    FAMILIES,
    EvalRequest,
    TaskData,
    TaskEntry,
    TaskFamily,
    TaskRequest,
    family_of,
    list_tasks,
    register_family,
    task_entry,
    unregister_family,
)
from .generative import GenerationTask
from .regbench import RegBenchBuilder
from .regular_languages import LANGUAGES, RegularLanguageBuilder

for _family in (
    regbench.FAMILY,
    formal_language.FAMILY,
    generation.FAMILY,
    icl_arithmetic.FAMILY,
    text_mixture.FAMILY,
    text_lm.FAMILY,
):
    register_family(_family)
for _family in FUNCTION_CLASS_FAMILIES:  # the in-context regression suite (P5), one family per function class
    register_family(_family)

__all__ = [
    "FAMILIES",
    "GENERATION_TASKS",
    "LANGUAGES",
    "GenerationTask",
    "RegBenchBuilder",
    "RegularLanguageBuilder",
    "EvalRequest",
    "TaskData",
    "TaskEntry",
    "TaskFamily",
    "TaskRequest",
    "family_of",
    "list_tasks",
    "load_task",
    "register_family",
    "check_task_request",
    "task_builder",
    "task_config",
    "task_family",
    "task_option_fields",
    "unregister_family",
]


def task_family(name: str) -> str:
    """The name of the family serving task `name` (see :func:`family_of` for the family itself)."""
    return family_of(name).name


def task_option_fields(name: str) -> tuple[str, ...]:
    """Keyword overrides accepted by ``load_task(name, ...)``.

    Args:
        name: task name, one of :func:`list_tasks`.
    """
    return task_entry(name).option_fields


def load_task(name: str, cache_dir: str | None = None, config_name: str | None = None, **overrides):
    """Builds (or loads from the cache) a task's splits.

    Args:
        name: task name, one of :func:`list_tasks`.
        cache_dir: ``datasets`` cache directory (default: the ``datasets`` default).
        config_name: named builder config (default: the task's fixed config, else the builder's
            ``DEFAULT_CONFIG_NAME``).
        **overrides: config field overrides, e.g. ``n_train=2500, seed=0``.

    Returns:
        ``datasets.DatasetDict`` with the task's splits.

    Raises:
        ValueError: unknown task name, config name or override key, or a task without a builder (before any
            generation).
    """
    builder = task_builder(name, cache_dir, config_name, **overrides)
    builder.download_and_prepare()
    return builder.as_dataset()


def task_builder(name: str, cache_dir: str | None = None, config_name: str | None = None, **overrides):
    """The validated, not yet prepared builder behind :func:`load_task` (its ``config`` is the resolved config).

    Args:
        name, cache_dir, config_name, **overrides: as for :func:`load_task`.
    """
    entry, config_name = _builder_entry(name, config_name, overrides)
    return entry.builder(config_name=config_name, cache_dir=cache_dir, **overrides)


def task_config(name: str, config_name: str | None = None, **overrides):
    """The validated builder config :func:`load_task` would use, without a builder: nothing touches the disk.

    Args:
        name, config_name, **overrides: as for :func:`load_task`.

    Raises:
        ValueError: as :func:`load_task`, naming the field, the value and what is allowed.
    """
    entry, config_name = _builder_entry(name, config_name, overrides)
    return entry.builder.resolve_config(config_name, **overrides)


def check_task_request(request: TaskRequest) -> None:
    """Check a run's task options, training-set size and seed against the task's declared fields, before any work.

    Builder tasks resolve their builder config (field types, ranges, non-empty splits); online tasks run their
    entry's ``check_options``.

    Raises:
        ValueError: naming the field, the value and what is allowed.
    """
    entry = task_entry(request.task)
    if entry.builder is not None:
        task_config(request.task, **request.builder_overrides())
        return
    _check_option_names(request.task, entry, request.options)
    if entry.check_options is not None:
        entry.check_options(dict(request.options))


def _check_option_names(name: str, entry: TaskEntry, overrides) -> None:
    for key in overrides:
        if key not in entry.option_fields:
            raise ValueError(
                f"override {key!r} is not a field of task {name!r}; allowed: {', '.join(entry.option_fields)}"
            )


def _builder_entry(name: str, config_name: str | None, overrides) -> tuple[TaskEntry, str]:
    entry = task_entry(name)
    if entry.builder is None:
        raise ValueError(f"task={name!r} is sampled online and has no datasets builder; train it with train.py")
    _check_option_names(name, entry, overrides)
    configs = [entry.config_name] if entry.config_name else [c.name for c in entry.builder.BUILDER_CONFIGS]
    config_name = config_name or entry.config_name or entry.builder.DEFAULT_CONFIG_NAME
    if config_name not in configs:
        raise ValueError(f"config_name={config_name!r} is not one of: {', '.join(configs)}")
    return entry, config_name
