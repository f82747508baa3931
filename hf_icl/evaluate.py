"""`python -m hf_icl.evaluate --checkpoint DIR --task NAME [...]`: score a saved checkpoint, write `metrics.json`.

The checkpoint folder is what `train.py` writes to `<run>/model` (or any `save_pretrained` folder with a tokenizer).
The model and the task's classical baselines are scored on the same rows by the same evaluator as in training.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from transformers import AutoConfig, AutoTokenizer

from .models.heads import load_model
from .tasks import EvalRequest, TaskRequest, family_of, list_tasks
from .training.checkpoints import write_json_atomic


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m hf_icl.evaluate", description=__doc__, allow_abbrev=False)
    parser.add_argument("--checkpoint", required=True, help="folder written by save_pretrained (with tokenizer)")
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
    options = dict(run.get("task_options", {})) if same_task else {}
    for item in args.task_option:
        key, _, value = item.partition("=")
        options[key] = json.loads(value)
    n_train = args.n_train or (run.get("n_train") if same_task else None)
    seed = args.task_seed if args.task_seed is not None else (run.get("task_seed", 0) if same_task else 0)
    training = dict(run.get("training", {})) if same_task else {}
    return TaskRequest(args.task, n_train, seed, options, training)


def main(argv=None) -> dict:
    parser = build_parser()
    args = parser.parse_args(argv)
    checkpoint = Path(args.checkpoint)
    if not (checkpoint / "config.json").is_file():
        parser.exit(2, f"error: --checkpoint {checkpoint} has no config.json (expected a save_pretrained folder)\n")
    output_dir = Path(args.output_dir or f"{checkpoint.resolve()}-eval-{args.task}-{args.split}")
    if (output_dir / "metrics.json").exists() and not args.overwrite:
        parser.exit(2, f"error: {output_dir / 'metrics.json'} exists; pass --overwrite to replace it\n")
    family = family_of(args.task)
    request = task_request_of(AutoConfig.from_pretrained(checkpoint), args)
    data = family.prepare_data(request)  # the splits (and tokenizer) the run trained on, rebuilt from the seed
    model = load_model(family.head, checkpoint)
    if data.tokenizer is not None and (checkpoint / "tokenizer_config.json").is_file():
        data.tokenizer = AutoTokenizer.from_pretrained(checkpoint)  # the checkpoint's own tokenizer wins
    if args.max_rows and data.splits is not None:
        data.splits[args.split] = data.splits[args.split].select(
            range(min(args.max_rows, len(data.splits[args.split])))
        )
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
        family.plot(results, output_dir / family.plot_name, f"{metrics['architecture']} on {args.task}")
    print(json.dumps({"model": results.get("model"), "output": str(output_dir / "metrics.json")}))
    return metrics


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
