"""The generation family (P4 copying and lookups, the phone book, P1 associative recall, zoology MQAR).

Each task's :class:`~hf_icl.tasks.generative.GenerationTask` says how it is tokenized, trained on and scored.
Evaluation generates greedily through `pipeline("text-generation")` and scores string and character accuracy per
group, with the teacher-forced pass and the copy/lookup baselines on the same queries.
"""

from __future__ import annotations

from .. import copying, phonebook, recall
from ..family import EvalRequest, TaskEntry, TaskFamily, TaskRequest
from ..generative import GenerationTask
from ..lm_data import causal_lm_data
from ..objectives import token_cross_entropy

GENERATION_TASKS: dict[str, GenerationTask] = {**copying.SPECS, "phonebook": phonebook.SPEC, **recall.SPECS}
"""Task name -> how it is tokenized, trained on and scored."""

TASKS = {
    **{task: TaskEntry(copying.CopyingBuilder, task, copying.task_fields(task)) for task in copying.TASK_NAMES},
    "phonebook": TaskEntry(phonebook.PhonebookBuilder, "phonebook", phonebook.CONFIG_FIELDS),
    "associative_recall": TaskEntry(recall.RecallBuilder, "associative_recall", recall.AR_FIELDS),
    "mqar": TaskEntry(recall.RecallBuilder, "mqar", recall.MQAR_FIELDS),
}


def prepare_data(request: TaskRequest):
    from .. import task_builder

    builder = task_builder(request.task, **request.builder_overrides())
    builder.download_and_prepare()
    splits, spec = builder.as_dataset(), GENERATION_TASKS[request.task]
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
    return causal_lm_data(splits, tokenizer, encode, description, builder.config)


def evaluate(request: EvalRequest) -> dict:
    from ...evaluation.generation_eval import evaluate_generation

    data = request.data
    rows = data.splits[request.split]
    return evaluate_generation(request.task, request.model, data.tokenizer, rows, data.config, request.batch_size)


def plot(results: dict, path, title: str = "") -> None:
    from ...evaluation.generation_eval import plot_generation_curves

    plot_generation_curves(results, path, title)


FAMILY = TaskFamily(
    name="generation",
    tasks=TASKS,
    prepare_data=prepare_data,
    head="causal_lm",
    objective=token_cross_entropy,
    evaluate=evaluate,
    plot=plot,
    plot_name="generation_curves.png",
    metric_note="String accuracy: share of queries whose greedy continuation (through the text-generation "
    "pipeline) equals the answer, including the end-of-answer token where the task has one; character accuracy "
    "counts matching answer characters.",
    example_prompt="$abc|",
)
