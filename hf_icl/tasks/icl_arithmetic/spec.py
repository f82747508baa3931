"""The ICL-arithmetic family (P3 §4.1–4.2): linear tasks in context, scored on the last 2 answers of each task.

Training draws fresh sequences every step (P3 trains on newly sampled data) with token cross-entropy on every
position; the builder's validation and test splits are the fixed evaluation sets. Evaluation: next-token accuracy
on the answer digits of the last 2 examples of each task, the accuracy by example index, and the least-squares
baseline on the same positions. `--task-preset single_task` is P3 App. D.2's 1 task × 8 examples.
"""

from __future__ import annotations

import datasets

from ..family import EvalRequest, TaskData, TaskEntry, TaskFamily, TaskRequest
from ..loading import task_builder
from ..objectives import token_cross_entropy
from .evaluation import evaluate_icl_arithmetic, plot_accuracy_by_example
from .export import EXPORT
from .icl_arithmetic import CONFIG_FIELDS, ICLArithmeticBuilder, ICLArithmeticSampler
from .tokenizer import icl_arithmetic_tokenizer


def prepare_data(request: TaskRequest) -> TaskData:
    tokenizer = icl_arithmetic_tokenizer()
    overrides = {**request.builder_overrides(), "n_train": request.n_train or 0}  # training samples online
    builder = task_builder(request.task, **overrides)
    builder.download_and_prepare()
    config = builder.config
    fields = {
        "vocab_size": len(tokenizer),
        "pad_token_id": tokenizer.pad_token_id,
        "eos_token_id": tokenizer.eos_token_id,
    }
    description = {
        "n_train": None,
        "training": "online",
        "n_tasks": config.n_tasks,
        "n_ex": config.n_ex,
        "sequence_length": config.sequence_length,
    }
    return TaskData(
        train=ICLArithmeticSampler(config, tokenizer.get_vocab()),
        collate=None,
        model_fields=fields,
        tokenizer=tokenizer,
        splits=datasets.DatasetDict({split: builder.as_dataset(split=split) for split in ("validation", "test")}),
        config=config,
        description=description,
    )


def evaluate(request: EvalRequest) -> dict:
    data = request.data
    rows = data.splits[request.split]
    return evaluate_icl_arithmetic(request.model, data.tokenizer, rows, data.config, request.batch_size)


FAMILY = TaskFamily(
    name="icl_arithmetic",
    tasks={"icl_arithmetic": TaskEntry(ICLArithmeticBuilder, None, CONFIG_FIELDS)},
    prepare_data=prepare_data,
    head="causal_lm",
    objective=token_cross_entropy,
    evaluate=evaluate,
    plot=plot_accuracy_by_example,
    plot_name="accuracy_by_example.png",
    presets={"single_task": {"task_options": {"n_tasks": 1, "n_ex": 8}}},
    metric_note="Answer accuracy: teacher-forced next-token accuracy on the 5 answer digits of the last 2 examples of "
    "every task (P3 §4.2). The least-squares baseline answers each example with (a, b) fitted to the task's earlier "
    "examples.",
    example_prompt="154*709=+07058|648*011=+05920|526*187=",
    tokenizer=lambda request: icl_arithmetic_tokenizer(),
    export=EXPORT,
)
