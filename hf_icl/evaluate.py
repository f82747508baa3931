"""`python -m hf_icl.evaluate --checkpoint DIR --task NAME [...]`: score a saved checkpoint, write `metrics.json`.

The checkpoint folder is what `train.py` writes to `<run>/model` (or any `save_pretrained` folder with a tokenizer).
The model and the task's classical baselines are scored on the same rows by the same evaluator as in training.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from transformers import AutoModelForCausalLM, AutoTokenizer

from .evaluation.generation_eval import plot_generation_curves
from .evaluation.length_sweep import plot_length_curve
from .evaluation.task_evaluators import evaluate_task
from .tasks import list_tasks, task_builder, task_family


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


def task_config_of(config, args) -> dict:
    """Task generator settings: the training run's (recorded in `config.hf_icl_run`) unless overridden."""
    run = getattr(config, "hf_icl_run", None) or {}
    same_task = run.get("task") == args.task
    options = dict(run.get("task_options", {})) if same_task else {}
    for item in args.task_option:
        key, _, value = item.partition("=")
        options[key] = json.loads(value)
    n_train = args.n_train or (run.get("n_train") if same_task else None)
    seed = args.task_seed if args.task_seed is not None else (run.get("task_seed", 0) if same_task else 0)
    return {**({"n_train": n_train} if n_train else {}), "seed": seed, **options}


def main(argv=None) -> dict:
    parser = build_parser()
    args = parser.parse_args(argv)
    checkpoint = Path(args.checkpoint)
    if not (checkpoint / "config.json").is_file():
        parser.exit(2, f"error: --checkpoint {checkpoint} has no config.json (expected a save_pretrained folder)\n")
    output_dir = Path(args.output_dir or f"{checkpoint.resolve()}-eval-{args.task}-{args.split}")
    if (output_dir / "metrics.json").exists() and not args.overwrite:
        parser.exit(2, f"error: {output_dir / 'metrics.json'} exists; pass --overwrite to replace it\n")
    model = AutoModelForCausalLM.from_pretrained(checkpoint)
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    task_config = task_config_of(model.config, args)
    builder = task_builder(args.task, **task_config)
    builder.download_and_prepare()
    splits = builder.as_dataset()
    if args.max_rows:
        splits[args.split] = splits[args.split].select(range(min(args.max_rows, len(splits[args.split]))))
    results = evaluate_task(
        args.task, model, tokenizer, splits, args.split, batch_size=args.batch_size, config=builder.config
    )
    metrics = {
        "task": args.task,
        "checkpoint": str(checkpoint),
        "architecture": model.config.model_type,
        "num_parameters": model.num_parameters(),
        args.split: results,
        "eval_config": {**vars(args), "task_config": task_config},
    }
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / "metrics.json").write_text(json.dumps(metrics, indent=2, sort_keys=True))
    if task_family(args.task) == "generation":
        plot_generation_curves(
            results, output_dir / "generation_curves.png", f"{metrics['architecture']} on {args.task}"
        )
    elif "per_length" in results:
        plot_length_curve(
            results, output_dir / "length_generalization.png", f"{metrics['architecture']} on {args.task}"
        )
    print(json.dumps({"model": results.get("model"), "output": str(output_dir / "metrics.json")}))
    return metrics


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
