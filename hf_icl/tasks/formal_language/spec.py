"""The regular-language family (P2 §5): `input ? answer` sequences, one output class per string, length sweeps.

Training: loss on the answer token only (P2 §5.1), on the builder's fixed training split or, with
`--task-option online=true`, on fresh strings every step (so `--curriculum` can grow `train_max_length`).
Evaluation: per-length accuracy of the argmax at the query position over the test lengths (all beyond training),
with the in-range validation accuracy next to it.
"""

from __future__ import annotations

from ...evaluation.length_sweep import length_sweep, plot_length_curve
from ..family import EvalRequest, TaskEntry, TaskFamily, TaskRequest
from ..lm_data import causal_lm_data
from ..loading import task_builder
from ..objectives import token_cross_entropy
from ..online_rows import online_option, online_task_data
from .export import EXPORT
from .regular_languages import (
    LANGUAGES,
    RegularLanguageBuilder,
    causal_lm_example,
    task_fields,
    train_rows,
    valid_lengths,
)
from .tokenizer import formal_language_tokenizer

ONLINE = online_option(LANGUAGES)


def prepare_data(request: TaskRequest):
    tokenizer = formal_language_tokenizer()
    online = request.samples_online()
    fixed_split = {"n_train": 1} if online else {}  # online strings replace the training split: build one row of it
    builder = task_builder(request.task, **request.builder_overrides() | fixed_split)
    builder.download_and_prepare()
    splits = builder.as_dataset()
    train_lengths = valid_lengths(builder.config, "train")

    def encode(batch):
        texts = [causal_lm_example(dict(input=i, answer=a))[0] for i, a in zip(batch["input"], batch["answer"])]
        ids = tokenizer(texts)["input_ids"]
        return {"input_ids": ids, "labels": [[-100] * (len(seq) - 1) + [seq[-1]] for seq in ids]}

    description = {
        "n_train": len(splits["train"]),
        "train_lengths": f"{train_lengths[0]}-{train_lengths[-1]}",
        "test_lengths": f"{min(splits['test']['length'])}-{max(splits['test']['length'])}",
        "format": "input ? answer (loss on the answer only; accuracy = argmax at the query position)",
    }
    if not online:
        return causal_lm_data(splits, tokenizer, encode, description, builder.config)
    return online_task_data(builder, splits, tokenizer, encode, train_rows, task_fields(request.task), description)


def evaluate(request: EvalRequest) -> dict:
    splits, tokenizer, batch = request.data.splits, request.data.tokenizer, request.batch_size
    train_max_length = valid_lengths(request.data.config, "train")[-1]  # the longest length training could draw
    results = length_sweep(request.model, tokenizer, splits[request.split], train_max_length, batch_size=batch)
    if request.split == "test" and "validation" in splits:  # in-distribution accuracy, to read the curve against
        within = length_sweep(request.model, tokenizer, splits["validation"], train_max_length, batch_size=batch)
        results["model"]["accuracy_in_train_range"] = within["model"]["accuracy_in_train_range"]
    return results


def plot(results: dict, path, title: str = "") -> None:
    plot_length_curve(results, path, title)


FAMILY = TaskFamily(
    name="formal_language",
    tasks={language: TaskEntry(RegularLanguageBuilder, language, task_fields(language)) for language in LANGUAGES},
    prepare_data=prepare_data,
    head="causal_lm",
    objective=token_cross_entropy,
    evaluate=evaluate,
    plot=plot,
    plot_name="length_generalization.png",
    metric_note="Accuracy of the answer read at the query position, averaged over the test lengths (all longer "
    "than any training input); `accuracy_in_train_range` averages the training lengths.",
    example_prompt="0110?",
    tokenizer=lambda request: formal_language_tokenizer(),
    export=EXPORT,
    training_options=(ONLINE,),
)
