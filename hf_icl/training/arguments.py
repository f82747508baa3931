"""Command-line schema of `train.py`; every value is validated before any work starts."""

from __future__ import annotations

import argparse
import copy
import functools
import json
import sys
import warnings
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from types import SimpleNamespace

import yaml

from ..architectures import ARCHITECTURES, list_architectures
from ..block_features.feature_registry import (
    feature_options,
    features_label,
    parse_feature_option,
    used_block_features,
)
from ..modeling.configuration import check_choice, unread_override
from ..plugins import add_import_argument, preload
from ..strict_yaml import read_yaml  # strict: no duplicate keys, alias bombs or malformed numbers
from ..tasks import (
    FAMILIES,
    TaskRequest,
    check_task_request,
    family_of,
    list_tasks,
    run_task_options,
    task_entry,
    task_option_fields,
)
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
from .schedules import LIBRARY_SCHEDULES, LR_SCHEDULES, OWN_SCHEDULES
from .shared_overrides import with_shared_overrides

REPORT_TO = ("tensorboard", "trackio", "wandb", "none")
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
    shared_overrides: dict = field(default_factory=dict)
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
    max_train_minutes: float | None = None
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
    allow_changed_settings: bool = False
    report_to: str = "tensorboard"
    push_to_hub: str | None = None
    imports: list = field(default_factory=list)

    def resolved_output_dir(self) -> Path:
        if self.output_dir:
            return Path(self.output_dir)
        n_train = self.n_train or family_of(self.task).run_defaults.get("n_train")
        size = f"-n{n_train}" if n_train else ""
        arch = self.architecture + features_label(self.overrides)  # block features' labels, e.g. retnet+ngh1.123
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
    "max_train_minutes": Limit(float, low=0, low_open=True, optional=True),
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
_FIELD_DESTS = {"overrides": "override", "shared_overrides": "shared_override",
                "task_options": "task_option", "aux_loss_weights": "aux_loss_weight"}
LEGACY_TASK_OPTIONS: dict[str, str] = {"train_on_delimiter": "--train-on-delimiter"}
"""Run arguments that became task options (`TaskFamily.training_options`), with their old flag: the old config key
and flag still set the task option, with a `FutureWarning`, until the release after next."""


def option_type(option):
    """The argparse `type` of a block feature's option: its `parse`, with errors prefixed by the flag."""

    def parse(text: str):
        try:
            return option.parse(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(f"{option.flag} {err}") from None

    return parse


def feature_flags() -> dict[str, str]:
    """Config field -> the flag of the block feature option that sets it (for error messages)."""
    return {name: option.flag for name, option in feature_options().items()}


def build_parser(epilog: str | None = None) -> argparse.ArgumentParser:
    """`train.py`'s parser; `epilog` (kept as written) follows the flags in `--help` (:func:`topic_help`)."""
    parser = CommandLineParser(
        prog="train.py",
        description="Train an hf_icl architecture on an ICL task with Accelerate, then evaluate it. "
        "`--task T --help` and `--architecture A --help` also list that task's options and presets or that "
        "architecture's config fields and presets.",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter if epilog else argparse.HelpFormatter,
    )
    parser.add_argument("--config", help="YAML file of RunArguments fields; command-line flags override it")
    add_import_argument(parser)
    parser.add_argument("--architecture", choices=list_architectures(), help="architecture name")
    parser.add_argument("--task", choices=list_tasks(), help="task name")
    parser.add_argument("--n-train", type=int, help="training instances (default: the task family's)")
    parser.add_argument("--task-preset", help="named run settings of the task family (see its `presets`); a bare "
                        "run (no --config, --task, --architecture or --task-preset) uses the default task's "
                        "quickstart preset: RegBench's 4-layer RoPE Transformer with P1's n-gram heads, 600 steps")
    parser.add_argument("--task-seed", type=int, help="seed of the task generator")
    parser.add_argument("--preset", help="size preset of the architecture (tiny, small, base, ...)")
    parser.add_argument(
        "--override",
        action="append",
        type=key_value("--override", "hidden_size=256"),
        metavar="FIELD=VALUE",
        help="model config override, repeatable (e.g. --override num_hidden_layers=8); one the architecture's "
        "mixers do not read (position_embedding=rope on Mamba) is refused",
    )
    parser.add_argument(
        "--shared-override",
        action="append",
        type=key_value("--shared-override", "position_embedding=rope"),
        metavar="FIELD=VALUE",
        help="a model config override shared by a study's architectures, repeatable: applied where the "
        "architecture reads the field, left out (and said so) where none of its mixers does; --override wins",
    )
    parser.add_argument(
        "--task-option",
        action="append",
        type=key_value("--task-option", "n_test=100"),
        metavar="FIELD=VALUE",
        help="task generator override or task option, repeatable (e.g. --task-option n_test=100; `--task T --help` "
        "lists task T's options with their types and defaults); options every family of a kind reads: "
        + "; ".join(_task_option_help()),
    )
    for name, option in feature_options().items():  # each block feature's own flag (e.g. --ngram-heads)
        parser.add_argument(
            option.flag, dest=name, action="append", type=option_type(option), metavar=option.metavar, help=option.help
        )
    parser.add_argument("--lr", type=float, help="peak learning rate")
    parser.add_argument(
        "--min-lr",
        type=float,
        help="final learning rate of the cosine and wsd schedules (default: the defaults' ratio to --lr, 1/40, or "
        "RegBench's 1/120)",
    )
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
        metavar="{" + ",".join(OWN_SCHEDULES) + ",<transformers scheduler>}",
        help="after the warm-up: cosine to --min-lr, constant, or wsd (constant, then linear to --min-lr over the "
        "last --decay-ratio of the steps); or a transformers.get_scheduler schedule, with its own warm-up from 0 "
        "over the warm-up steps and by steps only: " + ", ".join(LIBRARY_SCHEDULES),
    )
    parser.add_argument("--decay-ratio", type=float, help="share of steps of the final decay of the wsd schedule")
    parser.add_argument(
        "--mixed-precision", choices=MIXED_PRECISION, help="bf16 autocast (fp32 master weights) or full fp32"
    )
    parser.add_argument("--grad-clip", type=float, help="gradient-norm clipping")
    parser.add_argument("--epochs", type=float, help="training epochs")
    parser.add_argument("--max-steps", type=int, help="stop after this many optimiser steps")
    parser.add_argument(
        "--max-train-minutes",
        type=float,
        help="also stop after this many minutes of training wall time (evaluation excluded); the schedule then runs "
        "on the larger of the step and the time fraction, so the wsd decay starts at (1 - decay ratio) of the "
        "budget and the run ends decayed whichever limit comes first",
    )
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
        help="online samplers: change a sampler parameter by step, repeatable (e.g. n_dims=5:20:1:2000); 'none' "
        "clears a curriculum the task family or a --config file sets",
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
    parser.add_argument(
        "--resume",
        action="store_true",
        default=None,
        help="continue from the last checkpoint, with the saved run's settings (a given setting that differs is "
        "refused)",
    )
    parser.add_argument(
        "--allow-changed-settings",
        action="store_true",
        default=None,
        help="with --resume: continue with the training settings given (learning rate, steps, batch size, ...) where "
        "they differ from the saved run's; metrics.json records both",
    )
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


def topic_help(argv: list[str] | None) -> str | None:
    """With `-h`/`--help`: the options and presets of the `--task` and the config fields of the `--architecture`
    the command line names (:mod:`hf_icl.option_help`), else `None`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not {"-h", "--help"} & set(argv):
        return None
    from ..option_help import architecture_help, task_help

    scan = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    scan.add_argument("--task"), scan.add_argument("--architecture")
    named = scan.parse_known_args(argv)[0]
    parts = [task_help(named.task)] if named.task in list_tasks() else []
    parts += [architecture_help(named.architecture)] if named.architecture in list_architectures() else []
    return "\n\n".join(parts) or None


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
`quickstart_preset` (RegBench's: the 4-layer RoPE recipe with P1's n-gram heads, 600 steps)."""


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


def with_relative_min_lr(values: dict, base: dict, given: dict) -> dict:
    """`values` with a `min_lr` that keeps `base`'s ratio to `lr` when `lr` is given and `min_lr` is not (a lower
    `--lr` never falls below a default final rate)."""
    if "lr" in given and "min_lr" not in given and base.get("lr"):
        values = {**values, "min_lr": base["min_lr"] * given["lr"] / base["lr"]}
    return values


def command_line_values(namespace: dict) -> dict:
    """The `RunArguments` fields a parsed command line gives (flags left out are absent, not `None`)."""
    values = {key: value for key, value in namespace.items() if value is not None}
    for flag in ("override", "shared_override", "task_option", "aux_loss_weight"):
        values.pop(flag, None)
    overrides = dict(namespace["override"] or [])
    for name in feature_options():  # a block feature's flag, repeatable: the parsed values concatenated
        values.pop(name, None)
        if namespace.get(name):
            overrides[name] = [item for parsed in namespace[name] for item in parsed]
    for name, pairs in (("overrides", overrides), ("shared_overrides", dict(namespace["shared_override"] or [])),
                        ("task_options", dict(namespace["task_option"] or [])),
                        ("aux_loss_weights", dict(namespace["aux_loss_weight"] or []))):  # fmt: skip
        if pairs:
            values[name] = pairs
    if not values.get("imports"):
        values.pop("imports", None)
    if "curriculum" in values:  # `--curriculum none`: no curriculum, whatever the layers below set
        values["curriculum"] = [text for text in values["curriculum"] if text != "none"]
    return values


SUPERSEDES: dict[str, tuple[str, str]] = {
    "max_steps": ("epochs", "the length of the run"),
    "warmup_steps": ("warmup_ratio", "the length of the warm-up"),
}
"""Pairs of run fields that set one thing: the first, when set (not `None`), decides what the second would. A layer
that gives the second without the first unsets the first of the layers below it (`--epochs 1` wins over a family's
default `max_steps`); one layer that gives both is a conflict."""
MERGED_FIELDS = ("overrides", "shared_overrides", "task_options", "aux_loss_weights")
"""Mapping fields merged key by key across layers (a `--config` file's `task_options` keep the family's others)."""


def merge_layers(layers: list[tuple[str, dict]], base: dict | None = None, conflicts: bool = True) -> dict:
    """The run-argument values of `layers` (lowest first) on top of `base`.

    A later layer's value replaces an earlier one's, except: mapping fields (:data:`MERGED_FIELDS`) merge key by
    key, `imports` add up, and a layer giving one of a pair of :data:`SUPERSEDES` unsets the other of the layers
    below. `conflicts=False` merges layers merged already, where both fields of a pair may come from different
    layers with the higher one's choice made (the other unset, or deciding nothing).

    Raises:
        ValueError: one layer gives both fields of a :data:`SUPERSEDES` pair, naming both.
    """
    merged = copy.deepcopy(base or {})
    for label, layer in layers:
        for first, (second, what) in SUPERSEDES.items():
            if conflicts and layer.get(first) is not None and second in layer:
                flags = flag_of_field(first), flag_of_field(second)
                both = f"{first}={layer[first]!r} ({flags[0]}) and {second}={layer[second]!r} ({flags[1]})"
                where = "--config: the file" if label == "--config" else f"{flags[0]}: the command line"
                raise ValueError(f"argument {where} gives both {both}, which both set {what}: give one of them")
            if second in layer and first not in layer:
                merged[first] = None
        for key, value in copy.deepcopy(layer).items():
            if key in MERGED_FIELDS and isinstance(value, dict) and isinstance(merged.get(key), dict):
                merged[key] = {**merged[key], **value}
            elif key == "imports" and isinstance(value, list) and isinstance(merged.get(key), list):
                merged[key] = list(dict.fromkeys([*merged[key], *value]))
            else:
                merged[key] = value
    return merged


def defaults_of() -> dict:
    """The dataclass defaults of every run argument."""
    return RunArguments().to_dict()


def move_legacy_task_options(given: dict, layers: list[tuple[str, dict]]) -> None:
    """Turn the old top-level run arguments that became task options (:data:`LEGACY_TASK_OPTIONS`) into task
    options of `given`, with a `FutureWarning`; a task option given explicitly in any layer wins."""
    explicit = {key for _, layer in layers for key in (layer.get("task_options") or {})}
    for name in LEGACY_TASK_OPTIONS:
        if name in given:
            value = given.pop(name)
            given["task_options"] = {**given.get("task_options", {}), **legacy_task_option(given, name, value,
                                                                                            explicit)}  # fmt: skip
            if not given["task_options"]:
                del given["task_options"]


def check_given(args: RunArguments, given: dict) -> None:
    """Checks that need to know which values were given: `--epochs` on a task sampled online."""
    if "epochs" in given and task_entry(args.task).builder is None:
        raise ValueError(
            f"argument --epochs: task={args.task!r} is sampled online and has no epochs; set its length with "
            "--max-steps"
        )


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
    recorded = set(saved) | ({"task_options"} if set(saved) & set(LEGACY_TASK_OPTIONS) else set())
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
    legacy = {name: marker["run_config"][name] for name in LEGACY_TASK_OPTIONS if name in marker["run_config"]}
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


def task_layers(task: str, preset: str | None) -> list[tuple[str, dict]]:
    """The run-argument defaults of `task`'s family, then its named `preset`, as layers of :func:`merge_layers`."""
    with naming("--task"):
        check_choice("task", task, list_tasks())
    family = family_of(task)
    layers = [("task family", dict(family.run_defaults))]
    if preset is not None:
        with naming("--task-preset"):
            check_choice("task_preset", preset, sorted(family.presets))
        layers.append(("task preset", dict(family.presets[preset])))
    return layers


def load_yaml_config(path: Path) -> dict:
    """The `RunArguments` fields of a YAML file, type-checked; errors name `--config`, the field and the value."""
    if not path.is_file():
        raise ValueError(f"argument --config: {str(path)!r} is not a file")
    try:
        values = read_yaml(path.read_text(encoding="utf-8"))
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
    overrides = values.get("overrides")
    for name in feature_options() if isinstance(overrides, dict) else ():  # a block feature's flag syntax
        if name in overrides:
            try:
                overrides = values["overrides"] = {**overrides, name: parse_feature_option(name, overrides[name])}
            except ValueError as err:
                raise ValueError(f"argument --config: overrides.{name} {err}") from None
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
    options = [key for key in task_option_fields(args.task) if key not in ("n_train", "seed")]
    for key in args.task_options:
        if key not in options:
            raise ValueError(
                f"argument --task-option: {key!r} is not one of: {', '.join(options)} "
                "(use --n-train and --task-seed for those)"
            )
    with naming("--task-option", {"n_train": "--n-train", "seed": "--task-seed"}):
        check_task_request(TaskRequest(args.task, args.n_train, args.task_seed, dict(args.task_options)))
