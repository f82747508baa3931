"""`train.py`'s command line: the flags, the topic help of `--task T --help`, and the run fields a parsed command
line gives."""

from __future__ import annotations

import argparse
import functools
import json
import sys

from ..architectures import list_architectures
from ..block_features.feature_registry import feature_options
from ..plugins import add_import_argument
from ..tasks import FAMILIES, list_tasks
from ..utils.validation import CommandLineParser, key_value
from .legacy import legacy_options
from .run_schema import BATCHING, DECAY_GROUPS, MIXED_PRECISION, REPORT_TO
from .schedules import LIBRARY_SCHEDULES, LR_SCHEDULES, OWN_SCHEDULES

_FIELD_DESTS = {"overrides": "override", "shared_overrides": "shared_override",
                "task_options": "task_option", "aux_loss_weights": "aux_loss_weight"}


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


def add_key_values(parser, flag: str, example: str, help: str, metavar: str = "FIELD=VALUE") -> None:
    """A repeatable `FLAG FIELD=VALUE` option (values parsed as YAML scalars by `key_value`)."""
    parser.add_argument(flag, action="append", type=key_value(flag, example), metavar=metavar, help=help)


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
                        "quickstart preset: RegBench's 4-layer RoPE Transformer with P1's n-gram heads, 500 steps")
    parser.add_argument("--task-seed", type=int, help="seed of the task generator")
    parser.add_argument("--preset", help="size preset of the architecture (tiny, small, base, ...)")
    add_key_values(parser, "--override", "hidden_size=256", "model config override, repeatable (e.g. --override "
                   "num_hidden_layers=8); one the architecture's mixers do not read (position_embedding=rope on "
                   "Mamba) is refused")  # fmt: skip
    add_key_values(parser, "--shared-override", "position_embedding=rope", "a model config override shared by a "
                   "study's architectures, repeatable: applied where the architecture reads the field, left out (and "
                   "said so) where none of its mixers does; --override wins")  # fmt: skip
    add_key_values(parser, "--task-option", "n_test=100", "task generator override or task option, repeatable (e.g. "
                   "--task-option n_test=100; `--task T --help` lists task T's options with their types and "
                   "defaults); options every family of a kind reads: " + "; ".join(_task_option_help()))  # fmt: skip
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
    parser.add_argument(
        "--data-seed",
        type=int,
        help="seed of the data order alone (batches, online samples, augmentation), so that initialisation (--seed) "
        "and data order can be varied apart; default: --seed",
    )
    parser.add_argument("--threads", type=int, help="CPU threads per process (default: all cores if single-process)")
    for name, (option, owners) in legacy_options().items():  # a family's task option that was a run argument
        parser.add_argument(
            option.legacy_flag,
            dest=name,
            **({"action": argparse.BooleanOptionalAction} if option.type is bool else {"type": option.type}),
            default=None,
            help=f"deprecated: use --task-option {name}={'true|false' if option.type is bool else 'VALUE'} "
            f"({', '.join(owners)})",
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
    add_key_values(parser, "--aux-loss-weight", "load_balance=0.01", "weight of a named auxiliary loss the model "
                   "reports (default 1.0), repeatable", metavar="NAME=WEIGHT")  # fmt: skip
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
    the command line names (:mod:`hf_icl.utils.option_help`), else `None`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not {"-h", "--help"} & set(argv):
        return None
    from ..utils.option_help import architecture_help, task_help

    scan = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    scan.add_argument("--task"), scan.add_argument("--architecture")
    named = scan.parse_known_args(argv)[0]
    parts = [task_help(named.task)] if named.task in list_tasks() else []
    parts += [architecture_help(named.architecture)] if named.architecture in list_architectures() else []
    return "\n\n".join(parts) or None


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


def flag_of_field(name: str) -> str:
    """The command-line flag of a `RunArguments` field (`--config` for the fields only a config file sets)."""
    return _flags_by_dest().get(_FIELD_DESTS.get(name, name), "--config")


@functools.cache
def _flags_by_dest() -> dict[str, str]:
    return {action.dest: action.option_strings[0] for action in build_parser()._actions if action.option_strings}
