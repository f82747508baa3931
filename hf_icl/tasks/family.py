"""`TaskFamily`: everything training, evaluation, reports and cards need from one family of tasks, in one object.

A family lives in one folder (``hf_icl/tasks/<family>/``) whose ``__init__`` registers it with
:func:`register_family` (``hf_icl.tasks`` imports every such folder; code outside the package calls
:func:`register_family` itself). The rest of hf_icl looks a task up with :func:`family_of` and never branches on a
family or task name (zoology's task configs and torchtitan's ``build()`` configs are the model).

What a family declares:

- ``tasks``: task name -> :class:`TaskEntry` (a ``datasets`` builder and its fixed config, and/or nothing for an
  online-only task; per-task declarations such as a solver or a baselines list, checked at registration);
- ``prepare_data(request) -> TaskData``: the builder's splits tokenized for training, or an online sampler, with the
  tokenizer (or continuous featuriser facts), collate function and the model fields the data fixes (``vocab_size``
  or ``input_dim``/``output_dim``);
- ``head``: ``"causal_lm"`` or ``"regression"`` (see :mod:`hf_icl.architectures.heads`);
- ``objective(model, batch) -> ObjectiveResult``: token cross-entropy, MSE, BCE, ... (:mod:`hf_icl.tasks.objectives`);
- ``evaluate(request) -> dict`` and ``plot(results, path, title)``: the test-split evaluator and its figure;
- ``run_defaults``: defaults of run arguments for this family (e.g. ``n_train``), ``presets``: named run settings;
- ``metric_note``: how to read the metrics (model cards, summaries);
- ``tokenizer(request)``: the task's tokenizer (token tasks), ``training_options``: the run options it reads
  (:class:`TaskOption`, set with ``--task-option``), ``export``: its Hub-layout dataset export
  (:class:`~hf_icl.hub.dataset_export.DatasetExport`, run by ``python -m hf_icl.export``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

HEADS = ("causal_lm", "regression")


@dataclasses.dataclass(frozen=True)
class TaskOption:
    """A run option a family reads when it prepares a task (``--task-option NAME=VALUE``, ``task_options:`` in a
    config file), e.g. RegBench's ``train_on_delimiter``. It never reaches the ``datasets`` builder.

    Args:
        name: the option name.
        type: its Python type (``bool``, ``int``, ``float`` or ``str``).
        default: the value when the run does not set it.
        doc: what it does (``--help``, docs).
        check: ``value -> None`` raising ``ValueError`` for a value of the right type that is still not allowed.
        legacy_flag: the flag of the top-level run argument this option was before it became a task option (e.g.
            ``--train-on-delimiter``): that flag and the config key ``name`` still set it, with a ``FutureWarning``,
            until the release after next (:mod:`hf_icl.training.legacy`); ``None`` for an option that never was one.
        samples_online: a ``bool`` option that, set true, makes the family draw the training data online (fresh
            rows every step, so ``--curriculum`` applies) instead of from the builder's fixed training split.
        tasks: the tasks of the family that have the option (``None``: all of them); another task refuses it.
    """

    name: str
    type: type
    default: Any
    doc: str
    check: Callable[[Any], None] | None = None
    legacy_flag: str | None = None
    samples_online: bool = False
    tasks: tuple[str, ...] | None = None

    def validate(self, value) -> Any:
        """`value` if it is allowed; raises ``ValueError`` naming the option, the value and what is allowed."""
        numeric = self.type is float and isinstance(value, int)
        if isinstance(value, bool) != (self.type is bool) or not (isinstance(value, self.type) or numeric):
            raise ValueError(f"{self.name}={value!r} is not allowed: expected a {self.type.__name__}")
        if self.check is not None:
            self.check(value)
        return value


@dataclasses.dataclass(frozen=True)
class TaskEntry:
    """One task of a family.

    Args:
        builder: the ``datasets.GeneratorBasedBuilder`` class generating it, or ``None`` for an online-only task.
        config_name: the builder config this task fixes, or ``None`` for a free choice (``config_name=``).
        option_fields: keyword overrides accepted by ``load_task(name, ...)`` / ``--task-option``.
        check_options: online tasks: ``options dict -> None``, raising ``ValueError`` naming the field, the value and
            what is allowed (run before any work; builder tasks are checked through their builder config instead).
        spec: the family's own per-task declaration (how the task is tokenized, sampled or scored), read by its
            ``prepare_data`` and ``evaluate``.
        solver: ``(prompt, answer_length) -> answer``, the task's exact answers read off a prompt (the oracle
            baseline of families that list ``"solver"`` in ``TaskFamily.entry_fields``).
        baselines: names of the baselines scored beside the model on this task.
        options_builder: an online task's ``datasets`` builder whose config documents its options (types,
            defaults, docs for ``--help`` and ``docs/tasks.md``), e.g. the builder of its fixed evaluation prompts;
            ``builder`` documents them where it is set.
    """

    builder: type | None
    config_name: str | None
    option_fields: tuple[str, ...]
    check_options: Callable[[dict], None] | None = None
    spec: Any = None
    solver: Callable[[str, int], str] | None = None
    baselines: tuple[str, ...] = ()
    options_builder: type | None = None


@dataclasses.dataclass
class TaskRequest:
    """What a family gets to prepare a task for a run.

    Args:
        task: the task name.
        n_train: training-set size override (``None``: the family's or builder's default).
        seed: the task generator's seed.
        options: ``--task-option`` values: generator overrides, and the family's :class:`TaskOption` values.
        training: run options a family may read (``augment``), by name; also the family's option values recorded
            by runs before they became task options (read when ``options`` lacks them).
    """

    task: str
    n_train: int | None = None
    seed: int = 0
    options: dict = dataclasses.field(default_factory=dict)
    training: dict = dataclasses.field(default_factory=dict)

    def builder_overrides(self) -> dict:
        """``load_task`` overrides: the generator options plus ``n_train`` and ``seed``."""
        own = {option.name for option in family_of(self.task).training_options}
        options = {key: value for key, value in self.options.items() if key not in own}
        return {**options, **({"n_train": self.n_train} if self.n_train else {}), "seed": self.seed}

    def option(self, name: str):
        """The value of the family's :class:`TaskOption` `name`: ``options``, else ``training``, else its default.

        Raises:
            ValueError: the family declares no such option, or the value is not allowed.
        """
        declared = {option.name: option for option in family_of(self.task).options_for(self.task)}
        if name not in declared:
            raise ValueError(f"task {self.task!r} has no option {name!r}; its options: {', '.join(declared) or 'none'}")
        for source in (self.options, self.training):
            if name in source:
                return declared[name].validate(source[name])
        return declared[name].default

    def samples_online(self) -> bool:
        """Whether training draws fresh data every step: the task has no builder, or an option of its family that
        :attr:`TaskOption.samples_online` is set true."""
        if task_entry(self.task).builder is None:
            return True
        return any(o.samples_online and self.option(o.name) for o in family_of(self.task).options_for(self.task))

    def training_option_values(self) -> dict:
        """Every :class:`TaskOption` of the task's family with its value for this request."""
        return {option.name: self.option(option.name) for option in family_of(self.task).options_for(self.task)}


@dataclasses.dataclass
class TaskData:
    """A task prepared for training and evaluation.

    Args:
        train: a map-style dataset of examples (finite; epochs, length-grouped batches) or an
            :class:`~hf_icl.tasks.online.OnlineSampler` (batches drawn per step).
        collate: list of examples -> batch dict (finite data; online samplers return batches directly).
        model_fields: config fields the data fixes (``vocab_size``, ``pad_token_id``, ... or ``input_dim``, ...).
        tokenizer: saved next to every checkpoint (``None`` for continuous inputs).
        splits: the raw splits the evaluator scores (``None`` if the evaluator samples its own).
        config: the builder or sampler config behind the data.
        description: facts about the data to record in the run config (``n_train`` at least).
        lengths: example lengths for length-grouped batches (``None``: plain shuffling).
        augment: ``(example, generator) -> example``, an exact symmetry of the training distribution drawn afresh
            for every example of every epoch (``--augment``; ``None``: examples are used as stored).
    """

    train: Any
    collate: Callable | None
    model_fields: dict
    tokenizer: Any = None
    splits: Any = None
    config: Any = None
    description: dict = dataclasses.field(default_factory=dict)
    lengths: list[int] | None = None
    augment: Callable | None = None

    @property
    def online(self) -> bool:
        return hasattr(self.train, "sample_batch")


@dataclasses.dataclass
class EvalRequest:
    """What a family's evaluator gets.

    Args:
        task: the task name.
        model: the trained model (``None`` to score baselines only, where the family has any).
        data: the :class:`TaskData` the model was trained on (or rebuilt from the checkpoint's run record).
        split: the split to score.
        batch_size: sequences per forward pass.
        with_baselines: also score the family's baselines; `False` for the periodic validation of `--eval-every`,
            which needs the model's numbers only (an evaluator without baselines ignores it).
    """

    task: str
    model: Any
    data: TaskData
    split: str = "test"
    batch_size: int = 64
    with_baselines: bool = True


@dataclasses.dataclass(frozen=True)
class TaskFamily:
    """One family of tasks and how every part of hf_icl uses it (see the module docstring).

    Args:
        name: the family name.
        tasks: task name -> :class:`TaskEntry`.
        prepare_data: :class:`TaskRequest` -> :class:`TaskData`.
        head: the model head, one of :data:`HEADS`.
        objective: ``(model, batch) -> ObjectiveResult``.
        evaluate: :class:`EvalRequest` -> results (``{"model": {...}, "baselines": {...}, ...}``).
        plot: ``(results, path, title)`` -> writes a PNG, or ``None`` for the generic bar chart.
        plot_name: the file name of that PNG in run and evaluation folders.
        run_defaults: run-argument defaults for this family, e.g. ``{"n_train": 2500}``.
        presets: named run settings (``--task-preset NAME``), each a dict of run-argument values.
        quickstart_preset: the preset a bare ``train.py`` runs when this family owns the default task (no
            ``--config``, ``--task``, ``--architecture`` or ``--task-preset`` given), or ``None`` for the family
            defaults alone.
        metric_note: how to read the metrics, for cards and summaries.
        example_prompt: a prompt for the model card's usage snippet (causal-LM heads).
        augmentation: what ``--augment`` does to this family's training examples (exact symmetries of the data
            distribution, set as ``TaskData.augment`` when ``training["augment"]``); ``None``: ``--augment`` is refused.
        tokenizer: :class:`TaskRequest` -> the task's ``PreTrainedTokenizerFast`` (``hf_icl.load_tokenizer``);
            required for ``causal_lm`` families, ``None`` for continuous inputs.
        training_options: the run options the family reads (:class:`TaskOption`, ``--task-option NAME=VALUE``).
        entry_fields: :class:`TaskEntry` fields every task of the family must set (e.g. ``("solver",)``), checked
            by :func:`register_family`.
        export: the family's Hub-layout dataset export (a :class:`~hf_icl.hub.dataset_export.DatasetExport`, shared
            by families exported together), or ``None``.
        metrics: the family's own metric functions by the stable name ``hf_icl.evaluation`` also serves them under
            (e.g. RegBench's ``{"regbench_metrics": regbench_metrics}``, :func:`declared_metrics`).
    """

    name: str
    tasks: Mapping[str, TaskEntry]
    prepare_data: Callable[[TaskRequest], TaskData]
    head: str
    objective: Callable
    evaluate: Callable[[EvalRequest], dict]
    plot: Callable | None = None
    plot_name: str = "test_curves.png"
    run_defaults: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    presets: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    quickstart_preset: str | None = None
    metric_note: str = ""
    example_prompt: str = ""
    augmentation: str | None = None
    tokenizer: Callable[[TaskRequest], Any] | None = None
    training_options: tuple[TaskOption, ...] = ()
    entry_fields: tuple[str, ...] = ()
    export: Any = None
    metrics: Mapping[str, Callable] = dataclasses.field(default_factory=dict)

    def options_for(self, task: str) -> tuple[TaskOption, ...]:
        """The :attr:`training_options` that `task` has (:attr:`TaskOption.tasks`)."""
        return tuple(option for option in self.training_options if option.tasks is None or task in option.tasks)

    def __post_init__(self):
        if self.head not in HEADS:
            raise ValueError(f"TaskFamily {self.name!r}: head={self.head!r} is not one of: {', '.join(HEADS)}")
        if self.quickstart_preset is not None and self.quickstart_preset not in self.presets:
            raise ValueError(f"TaskFamily {self.name!r}: quickstart_preset={self.quickstart_preset!r} is not one of "
                             f"its presets: {', '.join(sorted(self.presets)) or '(none)'}")


FAMILIES: dict[str, TaskFamily] = {}
"""Family name -> family, filled by :func:`register_family`."""

_TASK_TO_FAMILY: dict[str, str] = {}


def register_family(family: TaskFamily) -> TaskFamily:
    """Make a family's tasks known to ``load_task``, ``train.py``, ``python -m hf_icl.evaluate`` and the reports.

    Raises:
        ValueError: the family or one of its task names is registered already, a task lacks a field of
            ``family.entry_fields``, or a ``causal_lm`` family has no tokenizer.
    """
    _check_declarations(family)
    if family.name in FAMILIES:
        raise ValueError(f"task family {family.name!r} is already registered")
    taken = sorted(set(family.tasks) & set(_TASK_TO_FAMILY))
    if taken:
        raise ValueError(f"task names {taken} of family {family.name!r} are already registered")
    taken = sorted(set(family.metrics) & set(declared_metrics()))
    if taken:
        raise ValueError(f"metric names {taken} of family {family.name!r} are declared by another family already")
    FAMILIES[family.name] = family
    _TASK_TO_FAMILY.update(dict.fromkeys(family.tasks, family.name))
    return family


def _check_declarations(family: TaskFamily) -> None:
    if family.head == "causal_lm" and family.tokenizer is None:
        raise ValueError(f"task family {family.name!r}: a causal_lm family declares its tokenizer (tokenizer=...)")
    known = {field.name for field in dataclasses.fields(TaskEntry)}
    for field in family.entry_fields:
        if field not in known:
            raise ValueError(f"task family {family.name!r}: entry field {field!r} is not one of: {', '.join(known)}")
    for task, entry in family.tasks.items():
        missing = [field for field in family.entry_fields if getattr(entry, field) in (None, ())]
        if missing:
            raise ValueError(
                f"task {task!r} of family {family.name!r} declares no {', '.join(missing)}; the family requires "
                f"every task to set: {', '.join(family.entry_fields)}"
            )


def unregister_family(name: str) -> None:
    """Remove a family registered with :func:`register_family` (tests, plug-ins)."""
    family = FAMILIES.pop(name)
    for task in family.tasks:
        _TASK_TO_FAMILY.pop(task, None)


def declared_metrics() -> dict[str, Callable]:
    """Metric name -> function, for every metric a registered family declares (:attr:`TaskFamily.metrics`)."""
    return {name: metric for family in FAMILIES.values() for name, metric in family.metrics.items()}


def list_tasks() -> list[str]:
    """Names accepted by ``load_task``, ``train.py --task`` and ``python -m hf_icl.evaluate --task``."""
    return sorted(_TASK_TO_FAMILY)


def family_of(task: str) -> TaskFamily:
    """The family serving ``task``.

    Raises:
        ValueError: naming the task and the registered task names.
    """
    if task not in _TASK_TO_FAMILY:
        raise ValueError(f"task={task!r} is not one of: {', '.join(list_tasks())}")
    return FAMILIES[_TASK_TO_FAMILY[task]]


def task_entry(task: str) -> TaskEntry:
    return family_of(task).tasks[task]
