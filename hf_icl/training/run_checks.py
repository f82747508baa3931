"""The checks of a run's arguments before any work: every field, then the combinations of fields."""

from __future__ import annotations

from types import SimpleNamespace

from ..architectures import ARCHITECTURES, list_architectures
from ..block_features.feature_registry import used_block_features
from ..modeling.configuration import check_choice, unread_override
from ..tasks import TaskRequest, check_task_options, family_of, list_tasks, task_entry
from ..utils.validation import NON_NEGATIVE_NUMBER, check_field_values, check_limits, naming
from .run_parser import feature_flags, flag_of_field
from .run_schema import RUN_CHOICES, RUN_LIMITS, RunArguments
from .schedules import LIBRARY_SCHEDULES, OWN_SCHEDULES


def check_given(args: RunArguments, given: dict) -> None:
    """Checks that need to know which values were given: `--epochs` on a task sampled online."""
    with naming("--task-option"):  # the option that switches a task to online sampling is checked here first
        online = args.task_request().samples_online()
    if "epochs" in given and online:
        raise ValueError(
            f"argument --epochs: task={args.task!r} is sampled online in this run and has no epochs; set its length "
            "with --max-steps"
        )


def validate(args: RunArguments) -> None:
    """Check every run argument before any work; the first bad one raises `ValueError("argument --flag: ...")`.

    Types first (a `--config` file can hold anything), then choices, the ranges of :data:`RUN_LIMITS`, the model
    config with its overrides, and the task options against the task's builder config (types, ranges, non-empty
    splits) or its declared option check.
    """
    from huggingface_hub.utils import validate_repo_id

    from ..architectures import config_for

    defaults = RunArguments()
    for name, value in args.to_dict().items():
        with naming(flag_of_field(name)):
            check_field_values(RunArguments, {name: value})
    for name, allowed in {"architecture": list_architectures(), "task": list_tasks(), **RUN_CHOICES}.items():
        value = getattr(args, name)
        if not (value is None and getattr(defaults, name) is None):
            with naming(flag_of_field(name)):
                check_choice(name, value, allowed)
    with naming("--preset"):
        check_choice("preset", args.preset, sorted(ARCHITECTURES[args.architecture].presets))
    check_limits(args, RUN_LIMITS, {name: flag_of_field(name) for name in RUN_LIMITS})
    if args.min_lr > args.lr:
        raise ValueError(
            f"argument --min-lr: min_lr={args.min_lr!r} is above lr={args.lr!r} (--lr): expected a final learning "
            "rate <= the peak one"
        )
    if args.lr_schedule in LIBRARY_SCHEDULES and args.max_train_minutes is not None:
        raise ValueError(
            f"argument --lr-schedule: lr_schedule={args.lr_schedule!r} runs on steps only; --max-train-minutes needs "
            f"one of: {', '.join(OWN_SCHEDULES)}"
        )
    if args.allow_changed_settings and not args.resume:
        raise ValueError("argument --allow-changed-settings: it applies to --resume only")
    for name, weight in args.aux_loss_weights.items():
        NON_NEGATIVE_NUMBER.check(f"aux_loss_weights[{name!r}]", weight, "--aux-loss-weight")
    with naming("--curriculum"):
        args.curricula()  # each parses
    if args.augment and family_of(args.task).augmentation is None:
        with_symmetries = [t for t in list_tasks() if family_of(t).augmentation is not None]
        raise ValueError(
            f"argument --augment: task {args.task!r} declares no data symmetries; tasks that do: "
            f"{', '.join(with_symmetries) or 'none'}"
        )
    if args.resume and args.overwrite:
        raise ValueError("argument --overwrite: --resume and --overwrite exclude each other")
    if args.push_to_hub is not None:
        with naming("--push-to-hub"):
            validate_repo_id(args.push_to_hub)
    with naming("--override", feature_flags()):
        for feature in used_block_features(SimpleNamespace(**args.overrides)):  # selected by an override
            if not feature.continuous_inputs and family_of(args.task).head != "causal_lm":
                flag = feature_flags().get(feature.selector, "--override")
                raise ValueError(
                    f"argument {flag}: {feature.needs_token_ids}, and task {args.task!r} has continuous inputs "
                    f"(head {family_of(args.task).head!r}); allowed with token tasks only"
                )
        try:
            config = config_for(args.architecture, args.preset, **args.overrides)  # unknown or invalid fields fail here
        except (TypeError, ArithmeticError) as err:  # a value the config's own checks do not cover
            raise ValueError(f"overrides {args.overrides} give no valid config ({type(err).__name__}: {err})") from None
        unread = unread_override(config, args.overrides, args.architecture)
        if unread:
            raise ValueError(f"{unread} (to set it only where an architecture reads it: --shared-override)")
    request = args.task_request()
    check_task_options(request)
    check_online(args, request)


def check_online(args: RunArguments, request: TaskRequest) -> None:
    """`--max-steps` and `--curriculum` against whether this run samples its task online (after the task options,
    which can switch a dataset task to online sampling)."""
    entry, online = task_entry(args.task), request.samples_online()
    if online and not args.max_steps:
        raise ValueError(f"argument --max-steps: task={args.task!r} is sampled online (no epochs): pass --max-steps")
    if online and entry.builder is not None and args.n_train is not None:  # switched online by a task option
        raise ValueError(
            f"argument --n-train: n_train={args.n_train} sizes the fixed training split of task {args.task!r}, "
            "which this run replaces with rows drawn online; leave it out"
        )
    with naming("--curriculum"):
        for curriculum in args.curricula():
            if not online:
                switches = [o.name for o in family_of(args.task).options_for(args.task) if o.samples_online]
                how = f" unless --task-option {switches[0]}=true" if switches else ""
                raise ValueError(
                    f"curricula change an online sampler's parameters; task {args.task!r} trains on a fixed "
                    f"dataset{how}"
                )
            if curriculum.field not in entry.option_fields:
                raise ValueError(
                    f"field {curriculum.field!r} is not one of the options of task {args.task!r}: "
                    f"{', '.join(entry.option_fields)}"
                )
