"""Task registry: each task family is a ``datasets.GeneratorBasedBuilder`` (DESIGN §2.2).

Dataset scripts are gone in datasets >= 4, so builders are instantiated from the package:
``builder = Builder(config_name=..., **overrides); builder.download_and_prepare(); builder.as_dataset()``.
:func:`load_task` wraps exactly that. A task name maps to a builder class and either one fixed config (each
regular language is a config of :class:`RegularLanguageBuilder`) or ``None``, meaning ``config_name`` picks one
of the builder's configs (RegBench).
"""

from __future__ import annotations

import datasets

from . import copying, phonebook, recall
from .generative import GenerationTask
from .regbench import CONFIG_FIELDS as _REGBENCH_FIELDS
from .regbench import RegBenchBuilder
from .regular_languages import LANGUAGES, RegularLanguageBuilder, task_fields

TASKS: dict[str, tuple[type[datasets.GeneratorBasedBuilder], str | None]] = {
    "regbench": (RegBenchBuilder, None),
    **{language: (RegularLanguageBuilder, language) for language in LANGUAGES},
    **{task: (copying.CopyingBuilder, task) for task in copying.TASK_NAMES},
    "phonebook": (phonebook.PhonebookBuilder, "phonebook"),
    "associative_recall": (recall.RecallBuilder, "associative_recall"),
    "mqar": (recall.RecallBuilder, "mqar"),
}
"""Task name -> (builder class, fixed config name or ``None`` for a free choice of config)."""

_OVERRIDES: dict[str, tuple[str, ...]] = {
    "regbench": _REGBENCH_FIELDS,
    **{language: task_fields(language) for language in LANGUAGES},
    **{task: copying.task_fields(task) for task in copying.TASK_NAMES},
    "phonebook": phonebook.CONFIG_FIELDS,
    "associative_recall": recall.AR_FIELDS,
    "mqar": recall.MQAR_FIELDS,
}

GENERATION_TASKS: dict[str, GenerationTask] = {**copying.SPECS, "phonebook": phonebook.SPEC, **recall.SPECS}
"""Tasks scored by greedy generation (family ``generation``) -> how each is tokenized, trained on and scored."""


def list_tasks() -> list[str]:
    """Names accepted by :func:`load_task`.

    Returns:
        Sorted list of task names.
    """
    return sorted(TASKS)


def task_family(name: str) -> str:
    """`regbench`, `formal_language` or `generation`: decides the tokenizer, label masking and evaluator of a task.

    Args:
        name: task name, one of :func:`list_tasks`.
    """
    if name not in TASKS:
        raise ValueError(f"task={name!r} is not one of: {', '.join(list_tasks())}")
    if name in GENERATION_TASKS:
        return "generation"
    return "regbench" if TASKS[name][0] is RegBenchBuilder else "formal_language"


def task_option_fields(name: str) -> tuple[str, ...]:
    """Keyword overrides accepted by ``load_task(name, ...)``.

    Args:
        name: task name, one of :func:`list_tasks`.
    """
    if name not in TASKS:
        raise ValueError(f"task={name!r} is not one of: {', '.join(list_tasks())}")
    return _OVERRIDES[name]


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
        ValueError: unknown task name, config name or override key (before any generation).
    """
    builder = task_builder(name, cache_dir, config_name, **overrides)
    builder.download_and_prepare()
    return builder.as_dataset()


def task_builder(name: str, cache_dir: str | None = None, config_name: str | None = None, **overrides):
    """The validated, not yet prepared builder behind :func:`load_task` (its ``config`` is the resolved config).

    Args:
        name, cache_dir, config_name, **overrides: as for :func:`load_task`.
    """
    if name not in TASKS:
        raise ValueError(f"task={name!r} is not one of: {', '.join(list_tasks())}")
    builder_cls, fixed_config = TASKS[name]
    allowed = _OVERRIDES[name]
    for key in overrides:
        if key not in allowed:
            raise ValueError(f"override {key!r} is not a field of task {name!r}; allowed: {', '.join(allowed)}")
    configs = [fixed_config] if fixed_config else [c.name for c in builder_cls.BUILDER_CONFIGS]
    config_name = config_name or fixed_config or builder_cls.DEFAULT_CONFIG_NAME
    if config_name not in configs:
        raise ValueError(f"config_name={config_name!r} is not one of: {', '.join(configs)}")
    return builder_cls(config_name=config_name, cache_dir=cache_dir, **overrides)
