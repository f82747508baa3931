"""Phone-book lookup (P4 Repeat After Me §4.3, Fig. 1c; reference ``PhoneBookDataset``) as a ``datasets`` builder.

A row is a synthetic phone book of ``L`` lines ``First Last: ddd-ddd-dddd`` (names drawn from the bundled lists in
``data/`` beside this module, every full name distinct within a book; the first digit is 6–9 as in the
reference), then a blank line, ``shots`` lines of the book repeated as few-shot examples, a blank line, and the query
``First Last: `` of another entry. The answer is that entry's number followed by the EOS ``.``.

Train and validation books have ``train_min_entries .. train_max_entries`` lines, test books every
``test_min_entries, + test_entries_step, ... <= test_max_entries`` lines (``n_per_length`` each). Streams: train
``default_rng([seed, k, 0])``, validation ``[seed, k, 2]``, test size ``L`` ``[seed, k, 1, L]`` with
``k = crc32("phonebook")``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import datasets
import numpy as np

from ...baselines.copying import phonebook_answer
from ..builder import RowBuilder, check_counts, check_range, split_stream
from ..family import TaskEntry
from .copying import CITATION
from .generative import EOS, GenerationTask, span_features, span_queries, span_training_example
from .tokenizers import phonebook_tokenizer

DATA_DIR = Path(__file__).parent / "data"
CONFIG_FIELDS: tuple[str, ...] = (
    "n_train",
    "n_validation",
    "n_per_length",
    "train_min_entries",
    "train_max_entries",
    "test_min_entries",
    "test_max_entries",
    "test_entries_step",
    "shots",
    "seed",
)
"""Keyword overrides accepted by ``load_task("phonebook", ...)``."""

_VERSION = datasets.Version("1.0.0")  # bump whenever sampling changes


@cache
def names() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The bundled first and last names (one per line in ``data/first_names.txt`` and ``data/last_names.txt``)."""
    first, last = ((DATA_DIR / f"{kind}_names.txt").read_text().split() for kind in ("first", "last"))
    return tuple(first), tuple(last)


@dataclasses.dataclass
class PhonebookConfig(datasets.BuilderConfig):
    """Configuration of the phone-book task.

    Args:
        n_train, n_validation: books in the training and validation splits.
        n_per_length: test books per test size.
        train_min_entries, train_max_entries: inclusive range of book sizes in training and validation.
        test_min_entries, test_max_entries, test_entries_step: the test book sizes.
        shots: entries repeated as few-shot examples before the query (P4: 2).
        seed: the only source of randomness.
    """

    n_train: int = 5000
    n_validation: int = 256
    n_per_length: int = 64
    train_min_entries: int = 3
    train_max_entries: int = 20
    test_min_entries: int = 10
    test_max_entries: int = 100
    test_entries_step: int = 10
    shots: int = 2
    seed: int = 0


def validate_config(config: PhonebookConfig) -> None:
    """Raises ``ValueError`` naming the field, the value and what is allowed, for an invalid config."""
    check_counts(config, ("n_train", "n_validation", "n_per_length", "seed", "shots"))
    first, last = names()
    for prefix in ("train", "test"):
        check_range(config, f"{prefix}_min_entries", f"{prefix}_max_entries", config.shots + 1)
        if getattr(config, f"{prefix}_max_entries") > len(first) * len(last):
            raise ValueError(f"{prefix}_max_entries is not allowed: at most {len(first) * len(last)} distinct names")
    if not (isinstance(config.test_entries_step, int) and config.test_entries_step >= 1):
        raise ValueError(f"test_entries_step={config.test_entries_step!r} is not allowed: expected an integer >= 1")


def phone_book(rng: np.random.Generator, entries: int, shots: int = 2) -> dict:
    """One phone book, its few-shot lines and query, as a span row.

    Args:
        rng: the only source of randomness.
        entries: lines in the book (> ``shots``).
        shots: few-shot lines.

    Returns:
        ``{"text", "answer_starts", "answer_ends", "lengths"}`` with one answer: the queried number.
    """
    first, last = names()
    people = rng.choice(len(first) * len(last), size=entries, replace=False).tolist()  # distinct full names
    digits = rng.integers(0, 10, size=(entries, 10))
    digits[:, 0] = rng.integers(6, 10, size=entries)
    lines = []
    for person, number in zip(people, digits.tolist()):
        d = "".join(map(str, number))
        lines.append(f"{first[person // len(last)]} {last[person % len(last)]}: {d[:3]}-{d[3:6]}-{d[6:]}")
    *examples, query = rng.choice(entries, size=shots + 1, replace=False).tolist()
    name, number = lines[query].split(": ")
    prompt = "\n".join(lines) + "\n\n" + "".join(lines[i] + "\n" for i in examples) + "\n" + name + ": "
    end = len(prompt) + len(number)
    return {"text": prompt + number + EOS, "answer_starts": [len(prompt)], "answer_ends": [end], "lengths": [entries]}


def iter_rows(config: PhonebookConfig, split: str) -> Iterator[dict]:
    """The rows of one split (streams in the module docstring)."""
    stream = split_stream(config.seed, split, "phonebook")
    if split == "test":
        for entries in range(config.test_min_entries, config.test_max_entries + 1, config.test_entries_step):
            rng = np.random.default_rng(stream + [entries])
            for _ in range(config.n_per_length):
                yield phone_book(rng, entries, config.shots)
        return
    rng = np.random.default_rng(stream)
    for _ in range(config.n_train if split == "train" else config.n_validation):
        yield phone_book(rng, int(rng.integers(config.train_min_entries, config.train_max_entries + 1)), config.shots)


class PhonebookBuilder(RowBuilder):
    """``datasets`` builder for the phone-book lookup (P4 §4.3). Instantiate it from the package.

    Args:
        config_name: ``phonebook`` (the only config).
        cache_dir: where ``datasets`` caches the prepared arrow files.
        **config_kwargs: overrides of :class:`PhonebookConfig` fields.
    """

    VERSION = _VERSION
    BUILDER_CONFIG_CLASS = PhonebookConfig
    BUILDER_CONFIGS = [PhonebookConfig(name="phonebook", version=_VERSION, description="P4 §4.3 phone book")]
    DEFAULT_CONFIG_NAME = "phonebook"
    FEATURES = span_features()
    DESCRIPTION = "Synthetic phone books with 2 shots and a query (P4 §4.3)."
    CITATION = CITATION

    validate_config = staticmethod(validate_config)
    SPLIT_SIZE_FIELDS = ("n_train", "n_validation", "n_per_length")
    iter_rows = staticmethod(iter_rows)


SPEC = GenerationTask(
    tokenizer=lambda config: phonebook_tokenizer(),
    queries=lambda row: span_queries(row, eos=True, group_field="lengths"),
    training_example=span_training_example,
    group_by="entries",
    train_max_group=lambda config: config.train_max_entries,
    description="one book per sequence; loss on the queried number and its EOS only",
)
"""How the phone book is tokenized, trained on and scored."""

ENTRIES: dict[str, TaskEntry] = {
    "phonebook": TaskEntry(PhonebookBuilder, "phonebook", CONFIG_FIELDS, spec=SPEC, solver=phonebook_answer)
}
"""The registry entry of the phone-book task."""
