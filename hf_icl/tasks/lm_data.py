"""Shared data plumbing of the causal-LM task families: tokenized training splits and right-padding collation."""

from __future__ import annotations

from collections.abc import Callable

import torch

from .family import TaskData


def pad_collate(pad_id: int) -> Callable:
    """Right-pad `input_ids` with `pad_id` and `labels` with −100.

    No attention mask is built, on purpose: every hf_icl mixer is causal, so right padding can never influence a
    real position, and the padded positions carry no loss. Leaving the mask out keeps attention on its fused
    causal kernel instead of a materialised (B, H, T, T) mask.
    """

    def collate(examples):
        longest = max(len(e["input_ids"]) for e in examples)
        input_ids = torch.full((len(examples), longest), pad_id, dtype=torch.long)
        labels = torch.full((len(examples), longest), -100, dtype=torch.long)
        for row, example in enumerate(examples):
            n = len(example["input_ids"])
            input_ids[row, :n] = torch.tensor(example["input_ids"])
            labels[row, :n] = torch.tensor(example["labels"])
        return {"input_ids": input_ids, "labels": labels}

    return collate


def token_fields(tokenizer) -> dict:
    """The model config fields a token task's tokenizer fixes."""
    ids = {"pad_token_id": tokenizer.pad_token_id, "eos_token_id": tokenizer.eos_token_id}
    return {"vocab_size": len(tokenizer), **ids}


def causal_lm_data(splits, tokenizer, encode: Callable, description: dict, config=None) -> TaskData:
    """Tokenize the training split with `encode` (batched `datasets.map`) into `input_ids`/`labels`.

    Args:
        splits: the task's `DatasetDict`.
        tokenizer: the task tokenizer (saved with every checkpoint; fixes `vocab_size`, pad and eos ids).
        encode: batch of rows -> `{"input_ids": [...], "labels": [...]}`.
        description: run-config facts about the data (`n_train` at least).
        config: the builder config behind `splits`.
    """
    train = splits["train"].map(encode, batched=True, remove_columns=splits["train"].column_names)
    return TaskData(
        train=train,
        collate=pad_collate(tokenizer.pad_token_id),
        model_fields=token_fields(tokenizer),
        tokenizer=tokenizer,
        splits=splits,
        config=config,
        description=description,
        lengths=[len(ids) for ids in train["input_ids"]],
    )
