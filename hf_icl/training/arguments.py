"""Command-line schema of `train.py`; every value is validated before any work starts."""

from __future__ import annotations

import argparse
import functools
import json
import warnings
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import yaml

from ..architectures import ARCHITECTURES, list_architectures
from ..modeling.configuration import check_choice
from ..plugins import add_import_argument, preload
from ..tasks import FAMILIES, TaskRequest, check_task_request, family_of, list_tasks, task_entry, task_option_fields
from ..tasks.online import StepCurriculum
from ..validation import (
    FRACTION,
    NON_NEGATIVE_NUMBER,
    OPTIONAL_POSITIVE_INT,
    POSITIVE_INT,
    POSITIVE_NUMBER,
    SEED,
    CommandLineParser,
    Limit,
    check_field_values,
    check_limits,
    key_value,
    naming,
)

REPORT_TO = ("tensorboard", "trackio", "wandb", "none")
LR_SCHEDULES = ("cosine", "constant", "wsd")
DECAY_GROUPS = ("matrices", "all")
MIXED_PRECISION = ("no", "bf16")
BATCHING = ("grouped", "shuffled")


@dataclass
class RunArguments:
    """Everything a training run needs; `train.py --help` documents each field.

    Defaults are AdamW (β = (0.9, 0.999), weight decay 0.1 on matrices), a linear warm-up from 1e-7, then a
    warm-up/stable/decay schedule that keeps the peak rate until the last 20 % of the steps (measured on RegBench:
    a cosine that decays early keeps small models on the pre-induction plateau; docs/results/recipe/). Paper 1's
    Appendix B recipe (β2 = 0.99, cosine, `|` labels masked) is the RegBench task preset `paper`. A task family may
    change defaults (`TaskFamily.run_defaults`) and offer named settings (`--task-preset`); the order of precedence is
    dataclass default < family default < task preset < `--config` file < command line.
    """

    architecture: str = "transformer"
    task: str = "regbench"
    n_train: int | None = None
    task_seed: int = 0
    preset: str = "small"
    overrides: dict = field(default_factory=dict)
    task_options: dict = field(default_factory=dict)
    task_preset: str | None = None
    curriculum: list = field(default_factory=list)
    aux_loss_weights: dict = field(default_factory=dict)
    lr: float = 1e-3
    min_lr: float = 2.5e-5
    warmup_start_lr: float = 1e-7
    warmup_ratio: float = 0.1
    warmup_steps: int | None = None
    weight_decay: float = 0.1
    weight_decay_on: str = "matrices"
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    lr_schedule: str = "wsd"
    decay_ratio: float = 0.2
    mixed_precision: str | None = None  # None: what `accelerate launch --mixed_precision` set, else "no"
    grad_clip: float = 1.0
    epochs: float = 3.0
    max_steps: int | None = None
    batch_size: int = 32
    gradient_accumulation_steps: int = 1
    seed: int = 0
    threads: int | None = None
    augment: bool = False
    batching: str = "grouped"
    output_dir: str | None = None
    checkpoint_every: int = 200
    keep_checkpoints: int = 2
    log_every: int = 10
    eval_batch_size: int = 64
    eval_every: int | None = None
    resume: bool = False
    overwrite: bool = False
    report_to: str = "tensorboard"
    push_to_hub: str | None = None
    imports: list = field(default_factory=list)

    def resolved_output_dir(self) -> Path:
        if self.output_dir:
            return Path(self.output_dir)
        n_train = self.n_train or family_of(self.task).run_defaults.get("n_train")
        size = f"-n{n_train}" if n_train else ""
        arch = self.architecture
        for spec in self.overrides.get("ngram_heads") or []:  # e.g. retnet+ngh1.123 (r: replace)
            arch += f"+ngh{'r' if spec.get('replace') else ''}{spec['layer']}.{''.join(map(str, spec['orders']))}"
        return Path("outputs") / f"{self.task}{size}-{arch}-{self.preset}-s{self.seed}"

    def to_dict(self) -> dict:
        return asdict(self)

    def curricula(self) -> list[StepCurriculum]:
        return [StepCurriculum.parse(text) for text in self.curriculum]


RUN_LIMITS: dict[str, Limit] = {
    "n_train": OPTIONAL_POSITIVE_INT,
    "task_seed": SEED,
    "lr": POSITIVE_NUMBER,
    "min_lr": NON_NEGATIVE_NUMBER,
    "warmup_start_lr": NON_NEGATIVE_NUMBER,
    "warmup_ratio": FRACTION,
    "warmup_steps": Limit(int, low=0, optional=True),
    "weight_decay": NON_NEGATIVE_NUMBER,
    "adam_beta1": FRACTION,
    "adam_beta2": FRACTION,
    "decay_ratio": Limit(float, low=0, high=1),
    "grad_clip": NON_NEGATIVE_NUMBER,
    "epochs": POSITIVE_NUMBER,
    "max_steps": OPTIONAL_POSITIVE_INT,
    "batch_size": POSITIVE_INT,
    "gradient_accumulation_steps": POSITIVE_INT,
    "seed": SEED,
    "threads": Limit(int, low=1, high=1024, optional=True),
    "checkpoint_every": POSITIVE_INT,
    "keep_checkpoints": POSITIVE_INT,
    "log_every": POSITIVE_INT,
    "eval_batch_size": POSITIVE_INT,
    "eval_every": OPTIONAL_POSITIVE_INT,
}
"""The allowed range of every numeric run argument, whatever its source (command line, `--config`, family defaults
and presets). A new numeric field needs an entry here (`tests/test_cli_fuzz.py` checks)."""
RUN_CHOICES: dict[str, tuple[str, ...]] = {
    "report_to": REPORT_TO,
    "lr_schedule": LR_SCHEDULES,
    "weight_decay_on": DECAY_GROUPS,
    "mixed_precision": MIXED_PRECISION,
    "batching": BATCHING,
}
"""The allowed values of every enumerated run argument besides `architecture`, `task` and the presets."""
_FIELD_DESTS = {"overrides": "override", "task_options": "task_option", "aux_loss_weights": "aux_loss_weight"}
LEGACY_TASK_OPTIONS: dict[str, str] = {"train_on_delimiter": "--train-on-delimiter"}
"""Run arguments that became task options (`TaskFamily.training_options`), with their old flag: the old config key
and flag still set the task option, with a `FutureWarning`, until the release after next."""


def parse_ngram_heads(text: str) -> list[dict]:
    """`"1:1,2,3"` -> `[{"layer": 1, "orders": [1, 2, 3], "replace": False}]` (the `ngram_heads` config field).

    Entries are `LAYER:ORDERS[:replace]`, separated by `;` (e.g. `"1:1,2,3:replace;-2:1,2,3:replace"`).
    """
    specs = []
    for entry in filter(None, (part.strip() for part in text.split(";"))):
        parts = entry.split(":")
        try:
            if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] != "replace"):
                raise ValueError
            specs.append(
                {"layer": int(parts[0]), "orders": [int(o) for o in parts[1].split(",")], "replace": len(parts) == 3}
            )
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"--ngram-heads entry {entry!r} must look like LAYER:ORDERS[:replace], e.g. 1:1,2,3 or -2:1,2,3:replace"
            ) from None
    return specs


def build_parser() -> argparse.ArgumentParser:
    parser = CommandLineParser(
        prog="train.py",
        description="Train an hf_icl architecture on an ICL task with Accelerate, then evaluate it.",
    )
    parser.add_argument("--config", help="YAML file of RunArguments fields; command-line flags override it")
    add_import_argument(parser)
    parser.add_argument("--architecture", choices=list_architectures(), help="architecture name")
    parser.add_argument("--task", choices=list_tasks(), help="task name")
    parser.add_argument("--n-train", type=int, help="training instances (default: the task family's)")
    parser.add_argument("--task-preset", help="named run settings of the task family (see its `presets`)")
    parser.add_argument("--task-seed", type=int, help="seed of the task generator")
    parser.add_argument("--preset", help="size preset of the architecture (tiny, small, base, ...)")
    parser.add_argument(
        "--override",
        action="append",
        type=key_value("--override", "hidden_size=256"),
        metavar="FIELD=VALUE",
        help="model config override, repeatable (e.g. --override num_hidden_layers=8)",
    )
    parser.add_argument(
        "--task-option",
        action="append",
        type=key_value("--task-option", "n_test=100"),
        metavar="FIELD=VALUE",
        help="task generator override or task option, repeatable (e.g. --task-option n_test=100); task options: "
        + "; ".join(_task_option_help()),
    )
    parser.add_argument(
        "--ngram-heads",
        action="append",
        type=parse_ngram_heads,
        metavar="LAYER:ORDERS[:replace]",
        help="insert n-gram blocks (P1 §6) after layer LAYER (0-based, negative from the output), one per order, or "
        "replace that layer; ';'-separated or repeated, e.g. --ngram-heads 1:1,2,3 or "
        "--ngram-heads=1:1,2,3:replace;-2:1,2,3:replace (write '=' when LAYER is negative); sets config ngram_heads",
    )
    parser.add_argument("--lr", type=float, help="peak learning rate")
    parser.add_argument("--min-lr", type=float, help="final learning rate of the cosine schedule")
    parser.add_argument("--warmup-ratio", type=float, help="share of steps spent warming up")
    parser.add_argument("--warmup-steps", type=int, help="warm-up length in optimiser steps (overrides the ratio)")
    parser.add_argument("--warmup-start-lr", type=float, help="learning rate at step 0 of the linear warm-up")
    parser.add_argument("--weight-decay", "--wd", dest="weight_decay", type=float, help="AdamW weight decay")
    parser.add_argument(
        "--weight-decay-on",
        choices=DECAY_GROUPS,
        help="decay matrices only (not biases, norms, embeddings) or every parameter",
    )
    parser.add_argument("--adam-beta1", type=float, help="AdamW β1")
    parser.add_argument("--adam-beta2", type=float, help="AdamW β2")
    parser.add_argument(
        "--batching",
        choices=BATCHING,
        help="finite data with lengths: grouped (default; batches of similar length from random mega-batches, less "
        "padding) or shuffled (a plain random permutation per epoch)",
    )
    parser.add_argument(
        "--lr-schedule",
        choices=LR_SCHEDULES,
        help="after the warm-up: cosine to --min-lr, constant, or wsd (constant, then linear to --min-lr over the "
        "last --decay-ratio of the steps)",
    )
    parser.add_argument("--decay-ratio", type=float, help="share of steps of the final decay of the wsd schedule")
    parser.add_argument(
        "--mixed-precision", choices=MIXED_PRECISION, help="bf16 autocast (fp32 master weights) or full fp32"
    )
    parser.add_argument("--grad-clip", type=float, help="gradient-norm clipping")
    parser.add_argument("--epochs", type=float, help="training epochs")
    parser.add_argument("--max-steps", type=int, help="stop after this many optimiser steps")
    parser.add_argument("--batch-size", type=int, help="global batch size (split across processes)")
    parser.add_argument(
        "--gradient-accumulation-steps",
        type=int,
        help="split each process's share of a step's batch into this many micro-batches, one backward each, then "
        "one optimiser step (same batches and schedule, less memory)",
    )
    parser.add_argument("--seed", type=int, help="seed of initialisation and data order")
    parser.add_argument("--threads", type=int, help="CPU threads per process (default: all cores if single-process)")
    parser.add_argument(
        "--train-on-delimiter",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="deprecated: use --task-option train_on_delimiter=true|false (RegBench)",
    )
    parser.add_argument(
        "--augment",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="apply the task family's exact data symmetries to every training example, drawn afresh each epoch "
        "(RegBench: a random relabelling of the letters and a random order of the strings); off by default",
    )
    parser.add_argument(
        "--curriculum",
        action="append",
        metavar="FIELD=START:END:INCREMENT:EVERY",
        help="online samplers: change a sampler parameter by step, repeatable (e.g. n_dims=5:20:1:2000)",
    )
    parser.add_argument(
        "--aux-loss-weight",
        action="append",
        type=key_value("--aux-loss-weight", "load_balance=0.01"),
        metavar="NAME=WEIGHT",
        help="weight of a named auxiliary loss the model reports (default 1.0), repeatable",
    )
    parser.add_argument("--output-dir", help="run folder (default outputs/<task>-n<N>-<arch>-<preset>-s<seed>)")
    parser.add_argument("--checkpoint-every", type=int, help="optimiser steps between checkpoints")
    parser.add_argument("--log-every", type=int, help="optimiser steps between logged losses")
    parser.add_argument(
        "--eval-every",
        type=int,
        help="score the model on the validation split every this many steps (its numbers only, no baselines); "
        "recorded in metrics.json's train.history with the training wall and CPU seconds so far (evaluation time "
        "excluded) and logged to the tracker as validation/*",
    )
    parser.add_argument("--resume", action="store_true", default=None, help="continue from the last checkpoint")
    parser.add_argument("--overwrite", action="store_true", default=None, help="replace an existing run folder")
    parser.add_argument("--report-to", choices=REPORT_TO, help="tracker for training curves")
    parser.add_argument("--push-to-hub", metavar="REPO_ID", help="upload the final checkpoint folder to this repo")
    return parser


def _task_option_help() -> list[str]:
    """`name (type, default D; families): doc` for every task option a registered family declares."""
    declared: dict[str, tuple] = {}
    for family in FAMILIES.values():
        for option in family.training_options:
            declared.setdefault(option.name, (option, []))[1].append(family.name)
    return [
        f"{name} ({option.type.__name__}, default {json.dumps(option.default)}; {', '.join(owners)}): {option.doc}"
        for name, (option, owners) in sorted(declared.items())
    ] or ["none"]


def parse_args(argv: list[str] | None = None) -> RunArguments:
    """Parse and validate; errors name the field, the value and the allowed values.

    Plug-ins named by `--import` (or a `--config` file's `imports:`) are imported first, so their architectures and
    tasks are valid choices.
    """
    preload(argv)
    parser = build_parser()
    namespace = vars(parser.parse_args(argv))
    values: dict = {}
    config_path = namespace.pop("config")
    if config_path:
        values.update(load_yaml_config(Path(config_path)))
    overrides = dict(namespace.pop("override") or [])
    task_options = dict(namespace.pop("task_option") or [])
    aux_loss_weights = dict(namespace.pop("aux_loss_weight") or [])
    ngram_heads = namespace.pop("ngram_heads")
    if ngram_heads:
        overrides["ngram_heads"] = [spec for specs in ngram_heads for spec in specs]
    imports = namespace.pop("imports") or []
    values.update({key: value for key, value in namespace.items() if value is not None})
    if imports:
        values["imports"] = list(dict.fromkeys([*values.get("imports", []), *imports]))
    legacy = {name: values.pop(name) for name in LEGACY_TASK_OPTIONS if name in values}
    explicit = set(values.get("task_options") or {}) | set(task_options)
    if aux_loss_weights:
        values["aux_loss_weights"] = {**values.get("aux_loss_weights", {}), **aux_loss_weights}
    values = {**task_defaults(values.get("task", RunArguments.task), values.get("task_preset")), **values}
    if overrides:
        values["overrides"] = {**values.get("overrides", {}), **overrides}
    if task_options:
        values["task_options"] = {**values.get("task_options", {}), **task_options}
    for name, value in legacy.items():
        values["task_options"] = {**values.get("task_options", {}), **legacy_task_option(values, name, value, explicit)}
    args = RunArguments(**values)
    validate(args)
    return args


def legacy_task_option(values: dict, name: str, value, explicit: set[str]) -> dict:
    """`{name: value}` for the task options of a run that set the old run argument `name` (with a `FutureWarning`):
    empty where an explicit task option sets it too, or where the run's task has no such option (runs of other tasks
    ignored the old argument)."""
    warnings.warn(
        f"{LEGACY_TASK_OPTIONS[name]} and the config key {name!r} are deprecated and will be removed in the release "
        f"after next: use --task-option {name}={json.dumps(value)} (config files: task_options: {{{name}: "
        f"{json.dumps(value)}}})",
        FutureWarning,
        stacklevel=3,
    )
    task = values.get("task", RunArguments.task)
    declared = task in list_tasks() and name in {option.name for option in family_of(task).training_options}
    return {name: value} if declared and name not in explicit else {}


def task_defaults(task: str, preset: str | None) -> dict:
    """The run-argument defaults of `task`'s family, with its named `preset` on top."""
    with naming("--task"):
        check_choice("task", task, list_tasks())
    family = family_of(task)
    values = dict(family.run_defaults)
    if preset is not None:
        with naming("--task-preset"):
            check_choice("task_preset", preset, sorted(family.presets))
        values.update(family.presets[preset])
    return values


def load_yaml_config(path: Path) -> dict:
    """The `RunArguments` fields of a YAML file, type-checked; errors name `--config`, the field and the value."""
    if not path.is_file():
        raise ValueError(f"argument --config: {str(path)!r} is not a file")
    try:
        values = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise ValueError(f"argument --config: {str(path)!r} is not valid YAML ({err})") from None
    values = {} if values is None else values
    if not isinstance(values, dict):
        raise ValueError(f"argument --config: {str(path)!r} holds a {type(values).__name__}, expected a mapping of "
                         "RunArguments fields")
    known = {f.name for f in fields(RunArguments)} | set(LEGACY_TASK_OPTIONS)
    for key in values:
        if key not in known:
            raise ValueError(f"argument --config: field {key!r} is not one of: {', '.join(sorted(known))}")
    with naming("--config"):
        fields_only = {key: value for key, value in values.items() if key not in LEGACY_TASK_OPTIONS}
        check_field_values(RunArguments, fields_only)
    ranged = [name for name in values if name in RUN_LIMITS]
    check_limits(values, {name: RUN_LIMITS[name] for name in ranged}, dict.fromkeys(ranged, "--config"))
    return values


def flag_of_field(name: str) -> str:
    """The command-line flag of a `RunArguments` field (`--config` for the fields only a config file sets)."""
    return _flags_by_dest().get(_FIELD_DESTS.get(name, name), "--config")


@functools.cache
def _flags_by_dest() -> dict[str, str]:
    return {action.dest: action.option_strings[0] for action in build_parser()._actions if action.option_strings}


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
        raise ValueError(f"argument --min-lr: min_lr={args.min_lr!r} is not allowed: expected a number <= lr={args.lr}")
    for name, weight in args.aux_loss_weights.items():
        NON_NEGATIVE_NUMBER.check(f"aux_loss_weights[{name!r}]", weight, "--aux-loss-weight")
    entry = task_entry(args.task)
    if entry.builder is None and not args.max_steps:
        raise ValueError(f"argument --max-steps: task={args.task!r} is sampled online (no epochs): pass --max-steps")
    with naming("--curriculum"):
        for curriculum in args.curricula():
            if entry.builder is not None:
                raise ValueError(f"curricula change an online sampler's parameters; task {args.task!r} is a dataset")
            if curriculum.field not in entry.option_fields:
                raise ValueError(
                    f"field {curriculum.field!r} is not one of the options of task {args.task!r}: "
                    f"{', '.join(entry.option_fields)}"
                )
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
    with naming("--override", {"ngram_heads": "--ngram-heads"}):
        try:
            config_for(args.architecture, args.preset, **args.overrides)  # unknown or invalid fields fail here
        except (TypeError, ArithmeticError) as err:  # a value the config's own checks do not cover
            raise ValueError(f"overrides {args.overrides} give no valid config ({type(err).__name__}: {err})") from None
    options = [key for key in task_option_fields(args.task) if key not in ("n_train", "seed")]
    for key in args.task_options:
        if key not in options:
            raise ValueError(
                f"argument --task-option: {key!r} is not one of: {', '.join(options)} "
                "(use --n-train and --task-seed for those)"
            )
    with naming("--task-option", {"n_train": "--n-train", "seed": "--task-seed"}):
        check_task_request(TaskRequest(args.task, args.n_train, args.task_seed, dict(args.task_options)))
