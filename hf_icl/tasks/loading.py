"""Loading a registered task: its splits (`load_task`), its builder or config without generating anything, its
tokenizer (`load_tokenizer`), and the checks of a run's task options before any work.

Builder-backed tasks are ``datasets.GeneratorBasedBuilder`` subclasses (DESIGN §2.2). Dataset scripts are gone in
datasets >= 4, so builders are instantiated from the package:
``builder = Builder(config_name=..., **overrides); builder.download_and_prepare(); builder.as_dataset()``;
:func:`load_task` wraps exactly that.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..utils.validation import naming
from .family import TaskEntry, TaskRequest, family_of, task_entry


def task_family(name: str) -> str:
    """The name of the family serving task `name` (see :func:`~hf_icl.tasks.family.family_of` for the family)."""
    return family_of(name).name


def task_option_fields(name: str) -> tuple[str, ...]:
    """Keyword overrides accepted by ``load_task(name, ...)``, then the family's run options (``--task-option``).

    Args:
        name: task name, one of :func:`~hf_icl.tasks.family.list_tasks`.
    """
    return task_entry(name).option_fields + tuple(option.name for option in family_of(name).options_for(name))


def load_task(name: str, cache_dir: str | None = None, config_name: str | None = None, **overrides):
    """Builds (or loads from the cache) a task's splits.

    Args:
        name: task name, one of :func:`~hf_icl.tasks.family.list_tasks`.
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


def load_tokenizer(name: str, **options):
    """The tokenizer a model of task `name` reads (saved next to every checkpoint trained on it).

    Args:
        name: a token task, one of :func:`~hf_icl.tasks.family.list_tasks`.
        **options: task options that change the vocabulary (e.g. MQAR's ``vocab_size``; text_lm's BPE is trained
            on the task's training split, which is generated if needed).

    Returns:
        A ``transformers.PreTrainedTokenizerFast``.

    Raises:
        ValueError: an unknown task or option, or a task with continuous inputs (no tokenizer).
    """
    family = family_of(name)
    if family.tokenizer is None:
        raise ValueError(f"task={name!r} has continuous inputs and no tokenizer (head {family.head!r})")
    request = TaskRequest(name, seed=options.pop("seed", 0), options=options)
    check_task_request(request)
    return family.tokenizer(request)


def run_task_options(name: str, options: Mapping, recorded: Mapping | None = None) -> dict:
    """A run's task options with every :class:`~hf_icl.tasks.family.TaskOption` of the task's family resolved: the
    value given in `options`, else the one an older run recorded as a top-level run argument (`recorded`), else the
    default. Used to compare a resumed run with the saved one.

    Args:
        name: the task.
        options: the run's ``task_options``.
        recorded: the run's other arguments (a saved run config).
    """
    request = TaskRequest(name, options=dict(options), training=dict(recorded or {}))
    return {**options, **request.training_option_values()}


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
    entry's ``check_options``; the family's run options (:class:`~hf_icl.tasks.family.TaskOption`) check their
    values.

    Raises:
        ValueError: naming the field, the value and what is allowed.
    """
    entry = task_entry(request.task)
    request.training_option_values()
    overrides = request.builder_overrides()
    if entry.builder is not None:
        task_config(request.task, **overrides)
        return
    generator_options = {key: value for key, value in overrides.items() if key in request.options}
    _check_option_names(request.task, entry, generator_options)
    if entry.check_options is not None:
        entry.check_options(generator_options)


def check_task_options(request: TaskRequest) -> None:
    """:func:`check_task_request` after checking the option names against the task's declared fields; errors name
    the command-line flag that set the field (`--task-option`, `--n-train`, `--task-seed`: `train.py`'s and
    `python -m hf_icl.evaluate`'s).

    Raises:
        ValueError: naming the flag, the field, the value and what is allowed.
    """
    options = [key for key in task_option_fields(request.task) if key not in ("n_train", "seed")]
    for key in request.options:
        if key not in options:
            raise ValueError(
                f"argument --task-option: {key!r} is not one of: {', '.join(options)} "
                "(use --n-train and --task-seed for those)"
            )
    with naming("--task-option", {"n_train": "--n-train", "seed": "--task-seed"}):
        check_task_request(request)


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
