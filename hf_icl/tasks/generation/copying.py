"""Copying and n-gram lookup (P4 Repeat After Me §3; DESIGN §4, §5.6) as one ``datasets`` builder.

Configs (one per task): ``copy`` (Fig. 1b: train lengths <= 50), ``copy_dup_ngram`` (§3.4, Fig. 4: trained on
copy, tested on strings with a duplicated n-gram for n = 1..8), ``lookup_suffix`` and ``lookup_prefix`` (§3.5,
Fig. 5–6: train lengths <= 30). The formats and samplers are in :mod:`.copying_sampling`.

Rows are span rows (:mod:`.generative`) with a per-example ``ngrams`` list. A train row is one packed
context of exactly ``context_len`` characters; validation rows (train lengths) and test rows are single examples.
Test lengths are ``test_min_length, test_min_length + test_length_step, ... <= test_max_length`` with
``n_per_length`` rows each; ``copy_dup_ngram`` instead has ``n_per_length`` rows per duplicated n, lengths drawn
from the test lengths. Streams: with ``k = crc32(task)``, train draws from ``default_rng([seed, k, 0])``,
validation from ``[seed, k, 2]`` and test group ``g`` (length or n) from ``[seed, k, 1, g]``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import datasets
import numpy as np

from ...baselines.copying import NGramCopier, copy_answer, lookup_prefix_answer, lookup_suffix_answer
from ..builder import RowBuilder, check_counts, check_range, split_stream
from ..family import TaskEntry
from .copying_sampling import copy_example, duplicate_ngram, lookup_example, pack, single, uniform_string
from .generative import GenerationTask, span_features, span_queries, span_training_example
from .tokenizers import copy_tokenizer

TASK_NAMES: tuple[str, ...] = ("copy", "copy_dup_ngram", "lookup_suffix", "lookup_prefix")
"""Every task of this builder; each is a config of the same name."""

CITATION = """@inproceedings{jelassi2024repeat,
  title={Repeat After Me: Transformers are Better than State Space Models at Copying},
  author={Jelassi, Samy and Brandfonbrener, David and Kakade, Sham M. and Malach, Eran},
  booktitle={ICML}, year={2024}}"""
"""BibTeX of P4."""

CONFIG_FIELDS: tuple[str, ...] = (
    "n_train",
    "n_validation",
    "n_per_length",
    "context_len",
    "train_min_length",
    "train_max_length",
    "test_min_length",
    "test_max_length",
    "test_length_step",
    "alphabet_size",
    "seed",
)
"""Keyword overrides accepted by every task here (lookups add ``ngram``, ``answer_length``; copy_dup_ngram adds
``dup_min_ngram``, ``dup_max_ngram``)."""

_VERSION = datasets.Version("1.0.0")  # bump whenever sampling changes
_MAX_ATTEMPTS = 1000


@dataclasses.dataclass
class CopyingConfig(datasets.BuilderConfig):
    """Configuration of one copying or lookup task.

    Args:
        task: one of :data:`TASK_NAMES`.
        n_train: packed training contexts.
        n_validation: single validation examples (train lengths).
        n_per_length: test examples per test length (per duplicated n for ``copy_dup_ngram``).
        context_len: characters per packed training context (P4 App. A.2: 420).
        train_min_length, train_max_length: inclusive range of ``|s|`` in training and validation.
        test_min_length, test_max_length, test_length_step: the test lengths.
        alphabet_size: strings use the first letters a.. of a–z (P4: 26).
        ngram: lookups: key length.
        answer_length: lookups: letters after the key to return (0: the rest of ``s``).
        dup_min_ngram, dup_max_ngram: ``copy_dup_ngram``: the duplicated n range.
        seed: the only source of randomness.
    """

    task: str = "copy"
    n_train: int = 2000
    n_validation: int = 256
    n_per_length: int = 64
    context_len: int = 420
    train_min_length: int = 1
    train_max_length: int = 50
    test_min_length: int = 10
    test_max_length: int = 200
    test_length_step: int = 10
    alphabet_size: int = 26
    ngram: int = 0
    answer_length: int = 0
    dup_min_ngram: int = 1
    dup_max_ngram: int = 8
    seed: int = 0


def task_fields(task: str) -> tuple[str, ...]:
    """Keyword overrides accepted by ``load_task(task, ...)``."""
    if task.startswith("lookup"):
        return CONFIG_FIELDS + ("ngram", "answer_length")
    return CONFIG_FIELDS + (("dup_min_ngram", "dup_max_ngram") if task == "copy_dup_ngram" else ())


def evaluation_lengths(config: CopyingConfig) -> list[int]:
    """The test lengths of a config."""
    return list(range(config.test_min_length, config.test_max_length + 1, config.test_length_step))


def longest_example(config: CopyingConfig) -> int:
    """Characters of the longest training example (must fit into ``context_len``)."""
    length = config.train_max_length
    if config.task.startswith("lookup"):
        answer = config.answer_length or length - config.ngram
        return length + config.ngram + answer + (3 if config.task == "lookup_suffix" else 4)
    return 2 * length + 3


def validate_config(config: CopyingConfig) -> None:
    """Raises ``ValueError`` naming the field, the value and what is allowed, for an invalid config."""
    if config.task not in TASK_NAMES:
        raise ValueError(f"task={config.task!r} is not one of: {', '.join(TASK_NAMES)}")
    check_counts(config, ("n_train", "n_validation", "n_per_length", "seed", "answer_length"))
    if not 2 <= config.alphabet_size <= 26:
        raise ValueError(f"alphabet_size={config.alphabet_size!r} is not allowed: expected 2 <= alphabet_size <= 26")
    if not (isinstance(config.test_length_step, int) and config.test_length_step >= 1):
        raise ValueError(f"test_length_step={config.test_length_step!r} is not allowed: expected an integer >= 1")
    lowest = 1
    if config.task.startswith("lookup"):
        if not (isinstance(config.ngram, int) and config.ngram >= 1):
            raise ValueError(f"ngram={config.ngram!r} is not allowed for {config.task}: expected an integer >= 1")
        lowest = config.ngram + max(config.answer_length, 1)
    check_range(config, "train_min_length", "train_max_length", lowest)
    if config.task == "copy_dup_ngram":
        check_range(config, "dup_min_ngram", "dup_max_ngram", 1)
        lowest = 2 * config.dup_max_ngram + 1  # two copies of the n-gram, both followed by a letter
    check_range(config, "test_min_length", "test_max_length", lowest)
    if not isinstance(config.context_len, int) or config.context_len < longest_example(config):
        raise ValueError(
            f"context_len={config.context_len!r} is not allowed: the longest training example "
            f"(train_max_length={config.train_max_length}) has {longest_example(config)} characters"
        )


def _examples(config: CopyingConfig, rng: np.random.Generator, lengths=None, dup_n: int = 0) -> Iterator:
    """Endless stream of examples; lengths uniform over ``lengths`` (default: the train range)."""
    lengths = np.arange(config.train_min_length, config.train_max_length + 1) if lengths is None else lengths
    while True:
        length = int(rng.choice(lengths))
        if config.task.startswith("lookup"):
            yield _lookup(config, rng, length)
        elif dup_n:
            yield copy_example(duplicate_ngram(rng, length, dup_n, config.alphabet_size), dup_n)
        else:
            yield copy_example(uniform_string(rng, length, config.alphabet_size))


def _lookup(config: CopyingConfig, rng: np.random.Generator, length: int):
    for _ in range(_MAX_ATTEMPTS):
        try:
            return lookup_example(rng, config.task, length, config.ngram, config.answer_length, config.alphabet_size)
        except LookupError:
            continue
    raise ValueError(
        f"ngram={config.ngram} is not allowed with alphabet_size={config.alphabet_size} and length {length}: "
        f"no {config.ngram}-gram occurred exactly once in {_MAX_ATTEMPTS} strings"
    )


def train_row(config: CopyingConfig, rng: np.random.Generator) -> dict:
    """One packed training context drawn from `rng` (the training split's rows, and online training's)."""
    return pack(_examples(config, rng), config.context_len)


def iter_rows(config: CopyingConfig, split: str) -> Iterator[dict]:
    """The rows of one split (see the module docstring for streams and layout).

    Args:
        config: a validated :class:`CopyingConfig`.
        split: ``train``, ``validation`` or ``test``.
    """
    stream = split_stream(config.seed, split, config.task)
    if split == "train":
        examples = _examples(config, np.random.default_rng(stream))  # one stream across the contexts
        for _ in range(config.n_train):
            yield pack(examples, config.context_len)
    elif split == "validation":
        examples = _examples(config, np.random.default_rng(stream))
        for _ in range(config.n_validation):
            yield single(next(examples))
    elif config.task == "copy_dup_ngram":
        for n in range(config.dup_min_ngram, config.dup_max_ngram + 1):
            examples = _examples(config, np.random.default_rng(stream + [n]), np.array(evaluation_lengths(config)), n)
            for _ in range(config.n_per_length):
                yield single(next(examples))
    else:
        for length in evaluation_lengths(config):
            examples = _examples(config, np.random.default_rng(stream + [length]), np.array([length]))
            for _ in range(config.n_per_length):
                yield single(next(examples))


def _config(task: str) -> CopyingConfig:
    lookup = task.startswith("lookup")
    ranges = {  # copy keeps the class defaults: train <= 50 (P4 §3.3), test 10, 20, ..., 200
        "copy": {},
        "copy_dup_ngram": dict(test_min_length=20, test_max_length=50),
        "lookup_suffix": dict(train_min_length=8, train_max_length=30, test_min_length=10, test_max_length=100),
    }
    ranges = ranges.get(task, ranges["lookup_suffix"])  # P4 §3.5: lookups train on lengths <= 30
    descriptions = {
        "copy": "copy uniform strings: $ s | s . (P4 §3.2-3.3)",
        "copy_dup_ngram": "trained on copy, tested on strings with one duplicated n-gram (P4 §3.4)",
        "lookup_suffix": "suffix-key n-gram lookup: $ s | g ans . (P4 §3.5, Fig. 5)",
        "lookup_prefix": "prefix-key n-gram lookup: $ g | s | ans . (P4 §3.5, Fig. 6)",
    }
    return CopyingConfig(
        name=task,
        version=_VERSION,
        task=task,
        description=descriptions[task],
        **({"ngram": 3, "answer_length": 3, **ranges} if lookup else ranges),
    )


class CopyingBuilder(RowBuilder):
    """``datasets`` builder for P4's copying and lookup tasks. Instantiate it from the package.

    Args:
        config_name: one of :data:`TASK_NAMES`; default ``copy``.
        cache_dir: where ``datasets`` caches the prepared arrow files.
        **config_kwargs: overrides of :class:`CopyingConfig` fields, e.g. ``n_train=100, seed=3``.
    """

    VERSION = _VERSION
    BUILDER_CONFIG_CLASS = CopyingConfig
    BUILDER_CONFIGS = [_config(task) for task in TASK_NAMES]
    DEFAULT_CONFIG_NAME = "copy"
    FEATURES = span_features(("ngrams",))
    DESCRIPTION = "Copying and n-gram lookup of uniform strings (P4 §3)."
    CITATION = CITATION

    validate_config = staticmethod(validate_config)  # runs before the cache directory is touched
    SPLIT_SIZE_FIELDS = ("n_train", "n_validation", "n_per_length")
    iter_rows = staticmethod(iter_rows)


def _spec(task: str) -> GenerationTask:
    dup = task == "copy_dup_ngram"
    return GenerationTask(
        tokenizer=lambda config: copy_tokenizer(),
        queries=lambda row: span_queries(row, eos=True, group_field="ngrams" if dup else "lengths"),
        training_example=span_training_example,
        group_by="ngram" if dup else "length",
        train_max_group=lambda config: None if dup else config.train_max_length,
        description="packed contexts; loss on each complete example's answer and EOS only (P4 App. A.2)",
        extra_baselines=copier_baselines if task in ("copy", "copy_dup_ngram") else (lambda config: {}),
        train_row=train_row,
    )


COPIER_ORDERS = tuple(range(1, 9))
"""Orders of the n-gram copiers (P4 Algorithm 1) scored beside models on the copy tasks."""


def copier_baselines(config) -> dict:
    return {f"{n}-gram copier": NGramCopier(n) for n in COPIER_ORDERS}


SPECS: dict[str, GenerationTask] = {task: _spec(task) for task in TASK_NAMES}
"""Task name -> how it is tokenized, trained on and scored."""

SOLVERS = {
    "copy": copy_answer,
    "copy_dup_ngram": copy_answer,
    "lookup_suffix": lookup_suffix_answer,
    "lookup_prefix": lookup_prefix_answer,
}
"""Task name -> its exact answers read off a prompt (the lookup oracle)."""

ENTRIES: dict[str, TaskEntry] = {
    task: TaskEntry(CopyingBuilder, task, task_fields(task), spec=SPECS[task], solver=SOLVERS[task])
    for task in TASK_NAMES
}
"""The registry entries of the copy and lookup tasks."""
