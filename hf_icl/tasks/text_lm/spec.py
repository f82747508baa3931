"""The text language-modelling family (P1 §6, Table 2): next-token prediction on real text with a trained BPE.

Training: token cross-entropy on every position of the `block_size` blocks cut from the training documents.
Evaluation: perplexity (exp of the mean next-token cross-entropy) on the blocks of the scored split, with a unigram
baseline from training-split token frequencies.
"""

from __future__ import annotations

import numpy as np

from ..family import EvalRequest, TaskEntry, TaskFamily, TaskRequest
from ..lm_data import causal_lm_data
from ..loading import task_builder
from ..objectives import token_cross_entropy
from .evaluation import evaluate_text_lm
from .export import EXPORT
from .text_lm import CONFIG_FIELDS, TextLMBuilder, document_ids, token_blocks
from .tokenizer import text_lm_tokenizer


def trained_bpe(request: TaskRequest):
    """The task's BPE: read from the prepared builder's cache, or trained on its training split (generated if
    needed)."""
    builder = task_builder(request.task, **request.builder_overrides())
    builder.download_and_prepare()
    return text_lm_tokenizer(builder, builder.as_dataset(split="train"))


def prepare_data(request: TaskRequest):
    builder = task_builder(request.task, **request.builder_overrides())
    builder.download_and_prepare()
    splits = builder.as_dataset()
    tokenizer = text_lm_tokenizer(builder, splits["train"])
    block_size = builder.config.block_size

    def encode(batch):  # run_clm's group_texts: one stream per map batch (1,000 documents), remainder dropped
        blocks = token_blocks(document_ids(tokenizer, batch["text"]), block_size)
        return {"input_ids": blocks, "labels": blocks}

    description = {
        "source": builder.config.source,
        "vocab_size": len(tokenizer),
        "block_size": block_size,
        "train_documents": len(splits["train"]),
    }
    data = causal_lm_data(splits, tokenizer, encode, description, builder.config)
    if len(data.train) == 0:
        raise ValueError(
            f"block_size={block_size} is not allowed here: the training documents hold fewer tokens than one block"
        )
    data.description["train_blocks"] = len(data.train)
    return data


def evaluate(request: EvalRequest) -> dict:
    data = request.data
    blocks = token_blocks(document_ids(data.tokenizer, data.splits[request.split]["text"]), data.config.block_size)
    train_blocks = np.asarray(data.train.with_format("numpy")["input_ids"])
    return evaluate_text_lm(request.model, blocks, train_blocks, len(data.tokenizer), request.batch_size)


FAMILY = TaskFamily(
    name="text_lm",
    tasks={"text_lm": TaskEntry(TextLMBuilder, None, CONFIG_FIELDS)},
    prepare_data=prepare_data,
    head="causal_lm",
    objective=token_cross_entropy,
    evaluate=evaluate,
    metric_note="Perplexity: exp of the mean next-token cross-entropy (nats) over every predicted position of the "
    "split's block_size blocks (its documents tokenised, each followed by eos, concatenated and cut; the first token "
    "of a block is context only); loss is that mean. The unigram baseline predicts every token with its training-split "
    "frequency (add-one smoothing) on the same positions. Tokens are byte-level BPE pieces, so perplexities are only "
    "comparable at the same vocabulary.",
    example_prompt="Return the number of",
    tokenizer=trained_bpe,
    export=EXPORT,
)
