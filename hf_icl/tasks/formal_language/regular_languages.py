"""The regular-language suite of RegularGPT (P2 §5.1, Table 1; §5.3) as one ``datasets`` builder (DESIGN §2.2, §5.4).

Each row is one string and its single answer: ``input`` (the symbols), ``answer`` (one character) and ``length``.
The causal-LM text is ``input + "?" + answer`` (:func:`causal_lm_example`): the loss is on the answer only and
accuracy is the argmax at the ``?`` position.

- Transduction (``even_pairs``, ``parity_check``, ``cycle_navigation``, ``modular_arithmetic``, ``parity_p``):
  i.i.d. symbols; train lengths 1–40, test every length 41–500 with ``n_per_length`` strings each (P2 protocol).
  Modular arithmetic uses odd lengths only (``d op d … d``).
- Recognition (``dyck_{2,3,4,12}``, ``tomita_{3,4,5,6}``): half members (answer ``1``), half non-members (``0``),
  each uniform among the strings of its exact length; train lengths 1–50, test 51–100. Lengths with no member
  or no non-member string are skipped: odd lengths for Dyck and Tomita 5, length 1 for Tomita 3 and 6, lengths
  1–2 for Tomita 4.
- ``parity_p`` (P2 §5.3): parity with P(1) = ``p_one`` (0.5 by default; the paper sweeps 0.1, 0.3, …, 0.9).

Streams: with ``k = crc32(language)`` (so tasks sharing a seed are not correlated), train draws from
``default_rng([seed, k, 0])``, validation from ``[seed, k, 2]`` and test length ``L`` from ``[seed, k, 1, L]``, so a
test length's rows depend neither on ``n_train`` nor on the rest of the test range.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator, Mapping

import datasets
import numpy as np

from ..builder import ValidatedBuilder, check_counts, check_range, split_stream
from .languages import RECOGNITION_LANGUAGES, TRANSDUCTION_LANGUAGES, ExactLengthSampler, sample_transduction

QUERY_SYMBOL = "?"
"""Separates the input from the answer in the causal-LM text."""

CITATION = """@inproceedings{chi2023regulargpt,
  title={Transformer Working Memory Enables Regular Language Reasoning and Natural Language Length Extrapolation},
  author={Chi, Ta-Chung and Fan, Ting-Han and Rudnicky, Alexander I. and Ramadge, Peter J.},
  booktitle={Findings of EMNLP}, year={2023}}"""
"""BibTeX of P2 (RegularGPT), whose §5.1 and §5.3 define the evaluation."""

LANGUAGES: tuple[str, ...] = tuple(TRANSDUCTION_LANGUAGES) + tuple(RECOGNITION_LANGUAGES)
"""Every task of the suite; each is a builder config of the same name."""

CONFIG_FIELDS: tuple[str, ...] = (
    "n_train",
    "n_validation",
    "n_per_length",
    "train_min_length",
    "train_max_length",
    "test_min_length",
    "test_max_length",
    "seed",
)
"""Keyword overrides accepted by every task of the suite (``parity_p`` also accepts ``p_one``)."""

_VERSION = datasets.Version("1.0.0")  # bump whenever sampling changes
_TRANSDUCTION_LENGTHS = dict(train_min_length=1, train_max_length=40, test_min_length=41, test_max_length=500)
_RECOGNITION_LENGTHS = dict(train_min_length=1, train_max_length=50, test_min_length=51, test_max_length=100)


@dataclasses.dataclass
class RegularLanguageConfig(datasets.BuilderConfig):
    """Configuration of one regular-language task.

    Args:
        language: one of :data:`LANGUAGES`.
        n_train: training strings (lengths uniform over the valid train lengths).
        n_validation: validation strings (same distribution as train).
        n_per_length: test strings per valid test length.
        train_min_length, train_max_length: inclusive train (and validation) length range.
        test_min_length, test_max_length: inclusive test length range.
        seed: the only source of randomness.
        p_one: ``parity_p`` only: probability of a 1 (``None`` for every other task).
    """

    language: str = "parity_check"
    n_train: int = 20000
    n_validation: int = 1000
    n_per_length: int = 512
    train_min_length: int = 1
    train_max_length: int = 40
    test_min_length: int = 41
    test_max_length: int = 500
    seed: int = 0
    p_one: float | None = None


def task_fields(language: str) -> tuple[str, ...]:
    """Keyword overrides accepted by ``load_task(language, ...)``.

    Args:
        language: one of :data:`LANGUAGES`.

    Returns:
        Field names.
    """
    return CONFIG_FIELDS + (("p_one",) if language == "parity_p" else ())


def valid_lengths(config: RegularLanguageConfig, split: str) -> list[int]:
    """Lengths a split draws from: the split's range, minus lengths the language cannot fill.

    Args:
        config: the task config.
        split: ``train``, ``validation`` or ``test``.

    Returns:
        Sorted list of lengths (odd only for modular arithmetic; for recognition, lengths with both classes).
    """
    prefix = "test" if split == "test" else "train"
    lo, hi = getattr(config, f"{prefix}_min_length"), getattr(config, f"{prefix}_max_length")
    if config.language in RECOGNITION_LANGUAGES:
        return ExactLengthSampler(RECOGNITION_LANGUAGES[config.language], hi).lengths_with_both_classes(lo, hi)
    odd_only = TRANSDUCTION_LANGUAGES[config.language].odd_lengths_only
    return [n for n in range(lo, hi + 1) if n % 2 == 1 or not odd_only]


def validate_config(config: RegularLanguageConfig) -> None:
    """Raises ``ValueError`` naming the field, the value and what is allowed, for an invalid config.

    Args:
        config: the config to check.
    """
    if config.language not in LANGUAGES:
        raise ValueError(f"language={config.language!r} is not one of: {', '.join(LANGUAGES)}")
    check_counts(config, ("n_train", "n_validation", "n_per_length", "seed"))
    for prefix in ("train", "test"):
        check_range(config, f"{prefix}_min_length", f"{prefix}_max_length", 1)
    if config.language == "parity_p":
        p = config.p_one
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 < p < 1.0:
            raise ValueError(f"p_one={p!r} is not allowed: expected a probability in (0, 1)")
    elif config.p_one is not None:
        raise ValueError(f"p_one={config.p_one!r} is not allowed for language={config.language!r}: only parity_p")
    for split, count in (("train", config.n_train), ("validation", config.n_validation), ("test", config.n_per_length)):
        prefix = "test" if split == "test" else "train"
        if count and not valid_lengths(config, split):
            lo, hi = getattr(config, f"{prefix}_min_length"), getattr(config, f"{prefix}_max_length")
            raise ValueError(
                f"{prefix}_min_length={lo}, {prefix}_max_length={hi} are not allowed for {config.language}: "
                "the range holds no valid length (modular arithmetic needs an odd length; recognition needs a "
                "length with both member and non-member strings)"
            )


def _strings(alphabet: str, x: np.ndarray) -> list[str]:
    codes = np.frombuffer(alphabet.encode("ascii"), dtype=np.uint8)[x]  # (B, L) ASCII codes
    return [row.decode("ascii") for row in np.ascontiguousarray(codes).view(f"S{x.shape[1]}").ravel().tolist()]


def _rows(config: RegularLanguageConfig, rng: np.random.Generator, lengths: np.ndarray, sampler, classes=None) -> dict:
    """Strings of the given per-row lengths, sampled group by group (sorted length, then label) for speed.
    Recognition rows take `classes` (member 1, non-member 0), by default half and half in a random order."""
    inputs, answers = [""] * len(lengths), [""] * len(lengths)
    if sampler is None:
        alphabet = TRANSDUCTION_LANGUAGES[config.language].alphabet
        for length in np.unique(lengths).tolist():
            idx = np.flatnonzero(lengths == length)
            x, labels = sample_transduction(config.language, rng, length, len(idx), config.p_one)
            for i, text, label in zip(idx.tolist(), _strings(alphabet, x), labels.tolist()):
                inputs[i], answers[i] = text, str(label)
    else:
        if classes is None:
            classes = rng.permutation(np.arange(len(lengths)) % 2)  # balanced: half members, half non-members
        for length in np.unique(lengths).tolist():
            for label in (0, 1):
                idx = np.flatnonzero((lengths == length) & (classes == label))
                for i, text in zip(idx.tolist(), _strings("01", sampler.sample(rng, length, len(idx), bool(label)))):
                    inputs[i], answers[i] = text, str(label)
    return {"input": inputs, "answer": answers, "length": lengths.tolist()}


def iter_split(config: RegularLanguageConfig, split: str) -> Iterator[dict]:
    """Generates one split in column chunks (one chunk for train/validation, one per length for test).

    Args:
        config: a validated :class:`RegularLanguageConfig`.
        split: ``train``, ``validation`` or ``test``.

    Returns:
        Iterator of ``{"input": [...], "answer": [...], "length": [...]}`` column dicts.
    """
    lengths = valid_lengths(config, split)
    dfa = RECOGNITION_LANGUAGES.get(config.language)
    sampler = None if dfa is None else ExactLengthSampler(dfa, max(lengths, default=0))
    stream = split_stream(config.seed, split, config.language)
    if split == "test":
        for length in lengths:
            rng = np.random.default_rng(stream + [length])
            yield _rows(config, rng, np.full(config.n_per_length, length), sampler)
    else:
        rng = np.random.default_rng(stream)
        count = config.n_train if split == "train" else config.n_validation
        yield _rows(config, rng, rng.choice(np.asarray(lengths), size=count) if count else np.zeros(0, int), sampler)


@functools.lru_cache(maxsize=64)
def _train_lengths(language: str, lo: int, hi: int) -> np.ndarray:
    config = RegularLanguageConfig(language=language, train_min_length=lo, train_max_length=hi)
    return np.asarray(valid_lengths(config, "train"))


@functools.lru_cache(maxsize=64)
def _exact_length_sampler(language: str, max_length: int) -> ExactLengthSampler:
    return ExactLengthSampler(RECOGNITION_LANGUAGES[language], max_length)


def train_rows(config: RegularLanguageConfig, rng: np.random.Generator, n: int) -> dict[str, list]:
    """`n` training strings drawn from `rng` as the training split draws its strings: each length uniform over the
    valid training lengths and, for recognition, each a member or a non-member with probability 1/2 (the fixed split
    balances its classes exactly). Online training (`--task-option online=true`) draws a batch per step.

    Args:
        config: a validated :class:`RegularLanguageConfig`.
        rng: the only source of randomness.
        n: the number of strings.

    Returns:
        ``{"input": [str], "answer": [str], "length": [int]}``.
    """
    lengths = _train_lengths(config.language, config.train_min_length, config.train_max_length)
    drawn = rng.choice(lengths, size=n)  # (n,)
    if config.language not in RECOGNITION_LANGUAGES:
        return _rows(config, rng, drawn, None)
    sampler = _exact_length_sampler(config.language, int(lengths[-1]))
    return _rows(config, rng, drawn, sampler, classes=rng.integers(0, 2, size=n))  # classes: (n,)


def generate_split(config: RegularLanguageConfig, split: str) -> dict[str, list]:
    """All rows of one split as columns.

    Args:
        config: the task config (validated here).
        split: ``train``, ``validation`` or ``test``.

    Returns:
        ``{"input": list[str], "answer": list[str], "length": list[int]}``.
    """
    validate_config(config)
    columns = {"input": [], "answer": [], "length": []}
    for chunk in iter_split(config, split):
        for key, values in chunk.items():
            columns[key].extend(values)
    return columns


def causal_lm_example(row: Mapping) -> tuple[str, int]:
    """The model's text for a row and the position whose next-token prediction is the answer.

    Args:
        row: mapping with ``input`` and ``answer``.

    Returns:
        ``(text, query_position)`` with ``text = input + "?" + answer`` and ``text[query_position] == "?"``;
        train on ``text[query_position + 1]`` only, and score the argmax of the logits at ``query_position``.
    """
    return row["input"] + QUERY_SYMBOL + row["answer"], len(row["input"])


def _config(language: str) -> RegularLanguageConfig:
    recognition = language in RECOGNITION_LANGUAGES
    return RegularLanguageConfig(
        name=language,
        version=_VERSION,
        language=language,
        p_one=0.5 if language == "parity_p" else None,
        description=f"{'balanced recognition' if recognition else 'transduction'} task {language} (P2 §5.1)",
        **(_RECOGNITION_LENGTHS if recognition else _TRANSDUCTION_LENGTHS),
    )


class RegularLanguageBuilder(ValidatedBuilder):
    """``datasets`` builder for the regular-language suite (P2 §5.1). Instantiate it from the package.

    Args:
        config_name: one of :data:`LANGUAGES`; default ``parity_check``.
        cache_dir: where ``datasets`` caches the prepared arrow files.
        **config_kwargs: overrides of :class:`RegularLanguageConfig` fields, e.g. ``n_train=100, seed=3``.
    """

    VERSION = _VERSION
    BUILDER_CONFIG_CLASS = RegularLanguageConfig
    BUILDER_CONFIGS = [_config(language) for language in LANGUAGES]
    DEFAULT_CONFIG_NAME = "parity_check"

    validate_config = staticmethod(validate_config)  # runs before the cache directory is touched
    SPLIT_SIZE_FIELDS = ("n_train", "n_validation", "n_per_length")

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description="Regular-language transduction and balanced recognition (P2 §5.1, §5.3).",
            features=datasets.Features(
                {
                    "input": datasets.Value("string"),
                    "answer": datasets.Value("string"),
                    "length": datasets.Value("int32"),
                }
            ),
            citation=CITATION,
        )

    def _generate_examples(self, split: str):
        i = 0
        for chunk in iter_split(self.config, split):
            for text, answer, length in zip(chunk["input"], chunk["answer"], chunk["length"]):
                yield datasets.builder.Key(0, i), {"input": text, "answer": answer, "length": length}
                i += 1
