"""Task adapters for training: tokenizer, label masking, collation and the end-of-run evaluation per task."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.utils.data import Sampler
from transformers.trainer_pt_utils import get_length_grouped_indices

from ..tasks import GENERATION_TASKS, load_task, task_builder, task_family
from ..tasks.regular_languages import causal_lm_example
from ..tokenization import formal_language_tokenizer, regbench_tokenizer


@dataclass
class TaskBundle:
    """What the training loop needs from a task.

    Args:
        tokenizer: saved with every checkpoint.
        train: tokenized training split with `input_ids` and `labels`.
        splits: the raw splits (for evaluation).
        description: run-config facts to record (e.g. whether `|` labels were trained).
        config: the builder config of `splits` (generation tasks; `None` otherwise).
    """

    tokenizer: object
    train: object
    splits: object
    description: dict
    config: object = None


class LengthGroupedEpochSampler(Sampler):
    """Batches of similar length (less padding), in an order fixed by `seed` and the epoch alone.

    Uses `transformers`' `get_length_grouped_indices` (random mega-batches sorted by length), then shuffles the
    order of the batches. Because the order depends only on (seed, epoch), a resumed run sees exactly the batches
    an uninterrupted run would.

    Args:
        lengths: length of every example.
        batch_size: examples per batch (per process).
        seed: data-order seed.
    """

    def __init__(self, lengths: list[int], batch_size: int, seed: int):
        self.lengths, self.batch_size, self.seed, self.epoch = list(lengths), batch_size, seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.lengths)

    def __iter__(self):
        generator = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
        indices = get_length_grouped_indices(self.lengths, self.batch_size, generator=generator)
        batches = [indices[i : i + self.batch_size] for i in range(0, len(indices), self.batch_size)]
        order = torch.randperm(len(batches), generator=generator).tolist()
        return iter([index for b in order for index in batches[b]])


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


def regbench_bundle(args) -> TaskBundle:
    tokenizer = regbench_tokenizer()
    n_train = args.n_train or 2500
    splits = load_task("regbench", n_train=n_train, seed=args.task_seed, **args.task_options)
    delimiter = tokenizer.convert_tokens_to_ids("|")

    def encode(batch):
        ids = tokenizer(batch["text"])["input_ids"]
        if args.train_on_delimiter:
            return {"input_ids": ids, "labels": ids}
        return {"input_ids": ids, "labels": [[-100 if t == delimiter else t for t in seq] for seq in ids]}

    train = splits["train"].map(encode, batched=True, remove_columns=splits["train"].column_names)
    description = {"train_on_delimiter": args.train_on_delimiter, "n_train": n_train}
    return TaskBundle(tokenizer, train, splits, description)


def formal_language_bundle(args) -> TaskBundle:
    """`input ? answer` sequences; the loss covers the answer token only (P2 §5.1)."""
    tokenizer = formal_language_tokenizer()
    options = dict(args.task_options)
    if args.n_train:
        options["n_train"] = args.n_train
    splits = load_task(args.task, seed=args.task_seed, **options)

    def encode(batch):
        texts = [causal_lm_example(dict(input=i, answer=a))[0] for i, a in zip(batch["input"], batch["answer"])]
        ids = tokenizer(texts)["input_ids"]
        return {"input_ids": ids, "labels": [[-100] * (len(seq) - 1) + [seq[-1]] for seq in ids]}

    train = splits["train"].map(encode, batched=True, remove_columns=splits["train"].column_names)
    description = {
        "n_train": len(splits["train"]),
        "train_lengths": f"{min(splits['train']['length'])}-{max(splits['train']['length'])}",
        "test_lengths": f"{min(splits['test']['length'])}-{max(splits['test']['length'])}",
        "format": "input ? answer (loss on the answer only; accuracy = argmax at the query position)",
    }
    return TaskBundle(tokenizer, train, splits, description)


def generation_bundle(args) -> TaskBundle:
    """Copying and retrieval tasks (P4, P1 AR, zoology MQAR): labels from the task's `training_example`."""
    options = dict(args.task_options)
    if args.n_train:
        options["n_train"] = args.n_train
    builder = task_builder(args.task, seed=args.task_seed, **options)
    builder.download_and_prepare()
    splits, spec = builder.as_dataset(), GENERATION_TASKS[args.task]
    tokenizer = spec.tokenizer(builder.config)
    vocab = tokenizer.get_vocab()

    def encode(batch):
        ids, labels = [], []
        for values in zip(*batch.values()):
            text, targets = spec.training_example(dict(zip(batch, values)))
            ids.append([vocab[c] for c in text])  # one character is one token
            labels.append([-100 if t is None else vocab[t] for t in targets])
        return {"input_ids": ids, "labels": labels}

    train = splits["train"].map(encode, batched=True, remove_columns=splits["train"].column_names)
    description = {"n_train": len(splits["train"]), "format": spec.description, "task_config": builder.config.name}
    return TaskBundle(tokenizer, train, splits, description, builder.config)


def task_bundle(args) -> TaskBundle:
    """The training bundle of `args.task`."""
    bundles = {"regbench": regbench_bundle, "formal_language": formal_language_bundle, "generation": generation_bundle}
    return bundles[task_family(args.task)](args)
