"""Tasks scored by what a model *generates* (P4 §3–4, P1 §3.3, zoology MQAR): the contract shared by their builders.

A row of such a task is one model sequence (``text``) holding one or more scored examples. Every example becomes a
:class:`Query`: the model reads ``prompt`` and must continue with exactly ``answer`` (then the EOS, where the task
has one). The evaluator (:mod:`.evaluation`) generates greedily from each prompt and also
runs the teacher-forced reference pass over ``prompt + answer (+ EOS)``; training uses :meth:`GenerationTask.
training_example`, whose labels mark the positions that carry loss.

Most tasks (copy, lookups, phone book, associative recall) keep their answers *inside* ``text`` and describe them
with :func:`span_features`: ``answer_starts[i] .. answer_ends[i]`` is the i-th answer, ``text[answer_ends[i]]`` its
EOS (if any). MQAR's labels are not part of its text (zoology); its module defines its own queries.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

import datasets

from ..builder import RowBuilder  # noqa: F401  (defined here before the family folders)

EOS = "."
"""End of an answer in every task of this family (and the tokenizers' eos)."""


@dataclasses.dataclass(frozen=True)
class Query:
    """One scored continuation.

    Args:
        prompt: what the model reads.
        answer: what it must generate next.
        eos: whether the answer must be followed by the EOS (generation must stop there).
        group: the bin it is reported in (string length, number of entries, duplicated n, ...).
    """

    prompt: str
    answer: str
    eos: bool
    group: int


@dataclasses.dataclass(frozen=True)
class GenerationTask:
    """How one task is tokenized, trained on and scored.

    Args:
        tokenizer: builder config -> the task's `PreTrainedTokenizerFast`.
        queries: row -> its :class:`Query` list.
        training_example: row -> ``(text, labels)``: ``labels[t]`` is the character predicted at position ``t``
            (from positions ``< t``, the Hugging Face label convention) or ``None`` for no loss.
        group_by: what :attr:`Query.group` counts (``length``, ``ngram``, ``entries``).
        train_max_group: builder config -> the largest group value seen in training (``None`` if not comparable).
        description: how the loss is applied, for the run record.
        extra_baselines: builder config -> ``{name: algorithm}`` scored beside the model in addition to the lookup
            oracle (e.g. the n-gram copiers of copy tasks); each algorithm has ``generate(prompts, budget)``.
        eos: the task's answers end with :data:`EOS` (what the lookup oracle appends).
        train_row: ``(builder config, numpy generator) -> one training row`` drawn as the builder draws its training
            split, for ``--task-option online=true`` (:mod:`.online_rows`); ``None`` for a task that trains on its
            fixed split only.
    """

    tokenizer: Callable
    queries: Callable[[Mapping], list[Query]]
    training_example: Callable[[Mapping], tuple[str, list]]
    group_by: str
    train_max_group: Callable
    description: str
    extra_baselines: Callable[[object], dict] = lambda config: {}
    eos: bool = True
    train_row: Callable | None = None


def span_features(extra: tuple[str, ...] = ()) -> datasets.Features:
    """Features of a span-task row: ``text``, ``answer_starts``, ``answer_ends``, ``lengths`` and ``extra`` lists.

    Args:
        extra: names of further per-example ``int32`` lists (e.g. ``ngrams``).
    """
    lists = ("answer_starts", "answer_ends", "lengths") + extra
    return datasets.Features(
        {"text": datasets.Value("string"), **{name: datasets.List(datasets.Value("int32")) for name in lists}}
    )


def span_queries(row: Mapping, eos: bool = True, group_field: str = "lengths") -> list[Query]:
    """One query per answer span: the prompt is everything before it.

    Args:
        row: a span-task row.
        eos: the answers end with :data:`EOS`.
        group_field: per-example list giving each query's group.
    """
    spans = zip(row["answer_starts"], row["answer_ends"], row[group_field])
    return [Query(row["text"][:start], row["text"][start:end], eos, group) for start, end, group in spans]


def span_training_example(row: Mapping, eos: bool = True) -> tuple[str, list]:
    """Loss on every answer character (and its EOS), nothing else (P4 App. A.2: only the labels are penalised).

    Args:
        row: a span-task row.
        eos: also train on the EOS after each answer.
    """
    text = row["text"]
    labels = [None] * len(text)
    for start, end in zip(row["answer_starts"], row["answer_ends"]):
        for t in range(start, end + int(eos)):
            labels[t] = text[t]
    return text, labels


def full_training_example(row: Mapping) -> tuple[str, list]:
    """Loss on every position after the first (plain language modelling, as P1's associative-recall training)."""
    text = row["text"]
    return text, [None] + list(text[1:])
