"""Task registry: every task belongs to one :class:`~hf_icl.tasks.family.TaskFamily`, registered once.

Builder-backed tasks are ``datasets.GeneratorBasedBuilder`` subclasses (DESIGN §2.2). Dataset scripts are gone in
datasets >= 4, so builders are instantiated from the package:
``builder = Builder(config_name=..., **overrides); builder.download_and_prepare(); builder.as_dataset()``;
:func:`load_task` wraps exactly that. Add a family with one file in ``families/`` and one :func:`register_family`
line below (or call :func:`register_family` from your own code).
"""

from __future__ import annotations

from . import copying, phonebook, recall  # noqa: F401  (public modules, as before the family registry)
from .families import formal_language, generation, icl_arithmetic, regbench, text_mixture
from .families.generation import GENERATION_TASKS
from .families.function_classes import FAMILIES as FUNCTION_CLASS_FAMILIES
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
    "task_builder",
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
    entry = task_entry(name)
    if entry.builder is None:
        raise ValueError(f"task={name!r} is sampled online and has no datasets builder; train it with train.py")
    for key in overrides:
        if key not in entry.option_fields:
            raise ValueError(
                f"override {key!r} is not a field of task {name!r}; allowed: {', '.join(entry.option_fields)}"
            )
    configs = [entry.config_name] if entry.config_name else [c.name for c in entry.builder.BUILDER_CONFIGS]
    config_name = config_name or entry.config_name or entry.builder.DEFAULT_CONFIG_NAME
    if config_name not in configs:
        raise ValueError(f"config_name={config_name!r} is not one of: {', '.join(configs)}")
    return entry.builder(config_name=config_name, cache_dir=cache_dir, **overrides)
