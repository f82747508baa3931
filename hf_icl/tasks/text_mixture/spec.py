"""The text-mixture family (P3 §4.1, §4.3): language modelling on two joined excerpts of different documents.

Training: token cross-entropy on every position of the training rows. Evaluation: cross-entropy per token overall,
on the first excerpt and after the join, with a unigram baseline.
"""

from __future__ import annotations

from ..documents import to_alphabet
from ..family import EvalRequest, TaskEntry, TaskFamily, TaskRequest
from ..lm_data import causal_lm_data
from ..loading import task_builder
from ..objectives import token_cross_entropy
from .evaluation import evaluate_text_mixture
from .export import EXPORT
from .text_mixture import CONFIG_FIELDS, TextMixtureBuilder
from .tokenizer import text_tokenizer


def prepare_data(request: TaskRequest):
    tokenizer = text_tokenizer()
    builder = task_builder(request.task, **request.builder_overrides())
    builder.download_and_prepare()
    splits = builder.as_dataset()

    def encode(batch):
        ids = tokenizer([to_alphabet(text) for text in batch["text"]])["input_ids"]
        return {"input_ids": ids, "labels": ids}

    description = {"n_train": len(splits["train"]), "l_max": builder.config.l_max, "source": builder.config.source}
    return causal_lm_data(splits, tokenizer, encode, description, builder.config)


def evaluate(request: EvalRequest) -> dict:
    data = request.data
    rows = data.splits[request.split]
    return evaluate_text_mixture(request.model, data.tokenizer, rows, data.splits["train"], request.batch_size)


FAMILY = TaskFamily(
    name="text_mixture",
    tasks={"text_mixture": TaskEntry(TextMixtureBuilder, None, CONFIG_FIELDS)},
    prepare_data=prepare_data,
    head="causal_lm",
    objective=token_cross_entropy,
    evaluate=evaluate,
    presets={"short": {"task_options": {"l_start": 48, "l_finish": 80, "l_max": 128}}},
    metric_note="Loss: next-character cross-entropy (nats per token) on the test rows, overall, on the first "
    "excerpt and on the second one (after the join); the unigram baseline uses training-split frequencies.",
    example_prompt="Return the number of",
    tokenizer=lambda request: text_tokenizer(),
    export=EXPORT,
)
