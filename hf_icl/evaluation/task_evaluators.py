"""One entry point scoring a model on any task's split, used by `train.py` and `python -m hf_icl.evaluate`."""

from __future__ import annotations

from ..tasks import task_builder, task_family
from .generation_eval import evaluate_generation
from .length_sweep import length_sweep
from .regbench_eval import evaluate_regbench


def evaluate_task(task: str, model, tokenizer, splits, split: str = "test", batch_size: int = 64, config=None) -> dict:
    """Score `model` (and the task's classical baselines, if any) on `splits[split]`.

    Args:
        task: task name (see `hf_icl.list_tasks()`).
        model: a causal LM.
        tokenizer: the task tokenizer saved with the model.
        splits: the task's `DatasetDict` (the training split gives the longest training length).
        split: which split to score.
        batch_size: sequences per forward pass.
        config: the builder config that generated `splits` (generation tasks; default: the task's defaults).

    Returns:
        The evaluator's results: `{"model": {...}, ...}` plus `baselines` (RegBench, generation tasks) and
        `per_length` (formal languages, generation tasks grouped by length).
    """
    family = task_family(task)
    if family == "generation":
        config = config if config is not None else task_builder(task).config
        return evaluate_generation(task, model, tokenizer, splits[split], config, batch_size=batch_size)
    if family == "regbench":
        return evaluate_regbench(model, tokenizer, splits[split], batch_size=batch_size)
    if family == "formal_language":
        train_max_length = max(splits["train"]["length"])
        results = length_sweep(model, tokenizer, splits[split], train_max_length, batch_size=batch_size)
        if split == "test" and "validation" in splits:  # in-distribution accuracy, to read the curve against
            within = length_sweep(model, tokenizer, splits["validation"], train_max_length, batch_size=batch_size)
            results["model"]["accuracy_in_train_range"] = within["model"]["accuracy_in_train_range"]
        return results
    raise ValueError(f"task={task!r} has no evaluator (family {family!r})")
