"""`python -m hf_icl.evaluation --checkpoint DIR --task NAME [...]`: score a saved checkpoint, write `metrics.json`.

`python -m hf_icl.evaluate` (the stable name, DESIGN §2.5) runs this same command.

The checkpoint folder is what `train.py` writes to `<run>/model` (or any `save_pretrained` folder with a tokenizer).
The model and the task's classical baselines are scored on the same rows by the same evaluator as in training.
Every argument is checked before the model or the data is loaded; a bad one exits with status 2 and one line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from transformers import AutoConfig, AutoTokenizer

from ..architectures.heads import load_model
from ..plugins import add_import_argument, preload
from ..tasks import EvalRequest, TaskRequest, check_task_options, family_of, list_tasks
from ..utils.atomic_files import atomic_path, write_json_atomic
from ..utils.validation import (
    OPTIONAL_POSITIVE_INT,
    POSITIVE_INT,
    SEED_MAX,
    CommandLineParser,
    Limit,
    check_limits,
    check_output_folder,
    key_value,
    naming,
    one_line,
)
from .checkpoint_files import check_checkpoint_files, check_weights_fit, rewriting_note, safetensors_files, skeleton
from .split_probe import probe_evaluation_splits

EVALUATE_LIMITS = {
    "n_train": OPTIONAL_POSITIVE_INT,
    "task_seed": Limit(int, low=0, high=SEED_MAX, optional=True),
    "max_rows": OPTIONAL_POSITIVE_INT,
    "batch_size": POSITIVE_INT,
}
"""The allowed range of every numeric argument of the command."""


def build_parser() -> CommandLineParser:
    parser = CommandLineParser(prog="python -m hf_icl.evaluate", description=__doc__)
    parser.add_argument("--checkpoint", required=True, help="folder written by save_pretrained (with tokenizer)")
    add_import_argument(parser)
    parser.add_argument("--task", required=True, choices=list_tasks())
    parser.add_argument("--split", default="test", choices=["test", "validation", "train"])
    parser.add_argument(
        "--n-train", type=int, help="task config (default: the checkpoint's training run, else the task's)"
    )
    parser.add_argument("--task-seed", type=int, help="task seed (default: the checkpoint's training run, else 0)")
    parser.add_argument(
        "--task-option",
        action="append",
        default=[],
        type=key_value("--task-option", "n_test=100"),
        metavar="FIELD=VALUE",
        help="task generator override (default: the checkpoint's training run)",
    )
    parser.add_argument("--max-rows", type=int, help="score only the first rows of the split")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--output-dir", help="where metrics.json goes (default: <checkpoint>-eval-<task>-<split>)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing metrics.json")
    return parser


def task_request_of(config, args) -> TaskRequest:
    """Task generator settings: the training run's (recorded in `config.hf_icl_run`) unless overridden."""
    run = getattr(config, "hf_icl_run", None) or {}
    same_task = run.get("task") == args.task
    options = {**(dict(run.get("task_options", {})) if same_task else {}), **dict(args.task_option)}
    n_train = args.n_train or (run.get("n_train") if same_task else None)
    seed = args.task_seed if args.task_seed is not None else (run.get("task_seed", 0) if same_task else 0)
    training = dict(run.get("training", {})) if same_task else {}
    return TaskRequest(args.task, n_train, seed, options, training)


def check_arguments(args) -> tuple[Path, Path, TaskRequest]:
    """Everything that needs no model and no data: ranges, task options, the checkpoint and the output folder.

    Returns:
        `(checkpoint, output_dir, task request)`.

    Raises:
        ValueError: naming the argument, the value and what is allowed.
    """
    check_limits(args, EVALUATE_LIMITS)
    explicit = TaskRequest(args.task, args.n_train, args.task_seed or 0, dict(args.task_option))
    check_task_options(explicit)
    checkpoint = Path(args.checkpoint)
    if not (checkpoint / "config.json").is_file():
        raise ValueError(
            f"argument --checkpoint: {str(checkpoint)!r} has no config.json (expected a save_pretrained folder)"
        )
    output_dir = Path(args.output_dir or f"{checkpoint.resolve()}-eval-{args.task}-{args.split}")
    check_output_folder(output_dir, "--output-dir")
    if (output_dir / "metrics.json").exists() and not args.overwrite:
        raise ValueError(f"argument --output-dir: {output_dir / 'metrics.json'} exists; pass --overwrite to replace it")
    with naming("--checkpoint"):
        check_checkpoint_files(checkpoint)  # config.json, weight headers, tokenizer files: before any work
        try:
            config = AutoConfig.from_pretrained(checkpoint, trust_remote_code=False)  # never a prompt
        except (OSError, KeyError, ValueError) as err:  # an unreadable config.json or an unknown model_type
            raise ValueError(f"{checkpoint / 'config.json'} does not load ({type(err).__name__}: {err})") from None
    request = task_request_of(config, args)
    check_task_options(request)  # with the options the checkpoint's run recorded
    return checkpoint, output_dir, request


def check_checkpoint_fits(checkpoint: Path, data, task: str):
    """Refuse a checkpoint that cannot read `task`'s data: a config field the data fixes differs (a smaller
    vocabulary, another input width), or its tokenizer lacks tokens of the task's. Nothing is loaded but configs and
    the tokenizer.

    Returns:
        The checkpoint's own tokenizer, when it has one and the task uses tokens (it wins over the task's).

    Raises:
        ValueError: naming `--checkpoint`, the field or the missing tokens, and the task it was trained on.
    """
    config = AutoConfig.from_pretrained(checkpoint)
    trained_on = (getattr(config, "hf_icl_run", None) or {}).get("task")
    where = f"; it was trained on task {trained_on!r}" if trained_on and trained_on != task else ""
    for name, needed in data.model_fields.items():
        have = getattr(config, name, None)
        if have == needed or (name == "vocab_size" and isinstance(have, int) and have >= needed):
            continue
        raise ValueError(
            f"argument --checkpoint: {checkpoint} has {name}={have!r}, and the data of task {task!r} needs "
            f"{name}={needed!r}{where}"
        )
    if data.tokenizer is None or not (checkpoint / "tokenizer_config.json").is_file():
        return None
    own = AutoTokenizer.from_pretrained(checkpoint)
    missing = sorted(set(data.tokenizer.get_vocab()) - set(own.get_vocab()))
    if missing:
        shown = ", ".join(map(repr, missing[:5])) + (", ..." if len(missing) > 5 else "")
        raise ValueError(
            f"argument --checkpoint: the tokenizer of {checkpoint} lacks {len(missing)} tokens of task {task!r} "
            f"({shown}){where}"
        )
    return own


def load_checked_model(head: str, checkpoint: Path):
    """The checkpoint's model under `head`, once its config's model is known to have exactly the weights saved
    (:func:`check_weights_fit`).

    Raises:
        ValueError: naming `--checkpoint` and the file that does not load or does not fit.
    """
    with naming("--checkpoint"):
        check_weights_fit(skeleton(head, AutoConfig.from_pretrained(checkpoint, trust_remote_code=False)), checkpoint)
    try:
        return load_model(head, checkpoint)
    except Exception as err:  # what the checks above do not foresee, still named in one line
        files = ", ".join(f.name for f in safetensors_files(checkpoint)) or "its weights"
        raise ValueError(
            f"argument --checkpoint: {checkpoint} does not load ({files}: {type(err).__name__}: {one_line(err)[:200]})"
        ) from None


def main(argv=None) -> dict:
    """Entry point of `python -m hf_icl.evaluation` (and `python -m hf_icl.evaluate`): check every argument, then
    score and write `metrics.json`."""
    try:
        preload(argv)  # a plug-in's tasks and architectures
    except ValueError as err:
        CommandLineParser(prog="python -m hf_icl.evaluate").fail(err)
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        checkpoint, output_dir, request = check_arguments(args)
    except (ValueError, OSError) as err:
        parser.fail(f"{err}{rewriting_note(Path(args.checkpoint))}")
    family = family_of(args.task)
    try:  # before the data: a config that does not fit its weights fails now, naming the files
        model = load_checked_model(family.head, checkpoint)
    except ValueError as err:
        parser.fail(f"{err}{rewriting_note(checkpoint)}")
    data = family.prepare_data(request)  # the splits (and tokenizer) the run trained on, rebuilt from the seed
    try:
        own_tokenizer = check_checkpoint_fits(checkpoint, data, args.task)
    except ValueError as err:
        parser.fail(err)
    if own_tokenizer is not None:
        data.tokenizer = own_tokenizer  # the checkpoint's own tokenizer wins
    if args.max_rows and data.splits is not None:
        data.splits[args.split] = data.splits[args.split].select(
            range(min(args.max_rows, len(data.splits[args.split])))
        )
    problem = probe_evaluation_splits(args.task, family, data, model, (args.split,))  # one row, before the work
    if problem is not None:
        flag = "--task-option" if args.task_option else "--checkpoint"
        parser.fail(f"argument {flag}: the model of {checkpoint} cannot take {problem}")
    results = family.evaluate(EvalRequest(args.task, model, data, args.split, args.batch_size))
    metrics = {
        "task": args.task,
        "task_family": family.name,
        "checkpoint": str(checkpoint),
        "architecture": model.config.model_type,
        "num_parameters": model.num_parameters(),
        args.split: results,
        "eval_config": {**vars(args), "task_request": vars(request)},
    }
    output_dir.mkdir(parents=True, exist_ok=True)
    write_json_atomic(output_dir / "metrics.json", metrics)
    if family.plot is not None:
        with atomic_path(output_dir / family.plot_name) as tmp:
            family.plot(results, tmp, f"{metrics['architecture']} on {args.task}")
    print(json.dumps({"model": results.get("model"), "output": str(output_dir / "metrics.json")}))
    return metrics


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
