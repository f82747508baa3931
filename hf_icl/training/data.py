"""Task adapters for training: tokenizer, label masking, collation and the end-of-run evaluation per task."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..evaluation.regbench_eval import evaluate_regbench
from ..tasks import load_task
from ..tokenization import regbench_tokenizer


@dataclass
class TaskBundle:
    """What the training loop needs from a task.

    Args:
        tokenizer: saved with every checkpoint.
        train: tokenized training split with `input_ids` and `labels`.
        splits: the raw splits (for evaluation).
        evaluate: `evaluate(model, split_name) -> dict` scoring the model (and baselines) on a raw split.
        description: run-config facts to record (e.g. whether `|` labels were trained).
    """

    tokenizer: object
    train: object
    splits: object
    evaluate: Callable
    description: dict


def pad_collate(pad_id: int) -> Callable:
    """Right-pad `input_ids` with `pad_id`, `labels` with −100, and build the attention mask."""

    def collate(examples):
        longest = max(len(e["input_ids"]) for e in examples)
        input_ids = torch.full((len(examples), longest), pad_id, dtype=torch.long)
        labels = torch.full((len(examples), longest), -100, dtype=torch.long)
        attention_mask = torch.zeros((len(examples), longest), dtype=torch.long)
        for row, example in enumerate(examples):
            n = len(example["input_ids"])
            input_ids[row, :n] = torch.tensor(example["input_ids"])
            labels[row, :n] = torch.tensor(example["labels"])
            attention_mask[row, :n] = 1
        return {"input_ids": input_ids, "labels": labels, "attention_mask": attention_mask}

    return collate


def regbench_bundle(args) -> TaskBundle:
    tokenizer = regbench_tokenizer()
    splits = load_task("regbench", n_train=args.n_train, seed=args.task_seed, **args.task_options)
    delimiter = tokenizer.convert_tokens_to_ids("|")

    def encode(batch):
        ids = tokenizer(batch["text"])["input_ids"]
        if args.train_on_delimiter:
            return {"input_ids": ids, "labels": ids}
        return {"input_ids": ids, "labels": [[-100 if t == delimiter else t for t in seq] for seq in ids]}

    train = splits["train"].map(encode, batched=True, remove_columns=splits["train"].column_names)

    def evaluate(model, split="test"):
        return evaluate_regbench(
            model, tokenizer, splits[split], batch_size=args.eval_batch_size, baseline_orders=args.baseline_orders
        )

    description = {"train_on_delimiter": args.train_on_delimiter, "n_train": args.n_train}
    return TaskBundle(tokenizer, train, splits, evaluate, description)


TASK_BUNDLES = {"regbench": regbench_bundle}
