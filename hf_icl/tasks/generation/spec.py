"""The generation family (P4 copying and lookups, the phone book, P1 associative recall, zoology MQAR).

Each task's entry declares its :class:`~.generative.GenerationTask` (``spec``: how it is tokenized, trained on and
scored) and its ``solver`` (the lookup oracle's exact answers). Evaluation generates greedily through
`pipeline("text-generation")` and scores string and character accuracy per group, with the teacher-forced pass and
the copy/lookup baselines on the same queries.
"""

from __future__ import annotations

from ..family import EvalRequest, TaskFamily, TaskRequest
from ..lm_data import causal_lm_data
from ..loading import task_builder, task_config
from ..objectives import token_cross_entropy
from ..online_rows import one_row_at_a_time, online_option, online_task_data
from . import copying, phonebook, recall
from .evaluation import evaluate_generation, plot_generation_curves
from .export import EXPORT

TASKS = {**copying.ENTRIES, **phonebook.ENTRIES, **recall.ENTRIES}
"""Task name -> its registry entry (builder, fixed config, options, spec, solver)."""

ONLINE_TASKS = tuple(task for task, entry in TASKS.items() if entry.spec.train_row is not None)
"""The tasks whose training rows can be drawn online (their spec has a ``train_row``)."""

ONLINE = online_option(ONLINE_TASKS)


def task_tokenizer(request: TaskRequest):
    """The task's tokenizer for the request's builder config (MQAR's vocabulary depends on ``vocab_size``)."""
    return TASKS[request.task].spec.tokenizer(task_config(request.task, **request.builder_overrides()))


def prepare_data(request: TaskRequest):
    online = request.samples_online()  # False for the tasks that have no `online` option
    fixed_split = {"n_train": 1} if online else {}  # online rows replace the training split: build one row of it
    builder = task_builder(request.task, **request.builder_overrides() | fixed_split)
    builder.download_and_prepare()
    splits, spec = builder.as_dataset(), TASKS[request.task].spec
    tokenizer = spec.tokenizer(builder.config)
    vocab = tokenizer.get_vocab()

    def encode(batch):
        ids, labels = [], []
        for values in zip(*batch.values()):
            text, targets = spec.training_example(dict(zip(batch, values)))
            ids.append([vocab[c] for c in text])  # one character is one token
            labels.append([-100 if t is None else vocab[t] for t in targets])
        return {"input_ids": ids, "labels": labels}

    description = {"n_train": len(splits["train"]), "format": spec.description, "task_config": builder.config.name}
    if not online:
        return causal_lm_data(splits, tokenizer, encode, description, builder.config)
    train_rows = one_row_at_a_time(spec.train_row)
    option_fields = TASKS[request.task].option_fields
    return online_task_data(builder, splits, tokenizer, encode, train_rows, option_fields, description)


def evaluate(request: EvalRequest) -> dict:
    data = request.data
    rows = data.splits[request.split]
    return evaluate_generation(request.task, request.model, data.tokenizer, rows, data.config, request.batch_size)


FAMILY = TaskFamily(
    name="generation",
    tasks=TASKS,
    prepare_data=prepare_data,
    head="causal_lm",
    objective=token_cross_entropy,
    evaluate=evaluate,
    plot=plot_generation_curves,
    plot_name="generation_curves.png",
    metric_note="String accuracy: share of queries whose greedy continuation (through the text-generation "
    "pipeline) equals the answer, including the end-of-answer token where the task has one; character accuracy "
    "counts matching answer characters.",
    example_prompt="$abc|",
    tokenizer=task_tokenizer,
    entry_fields=("spec", "solver"),
    export=EXPORT,
    training_options=(ONLINE,),
)
