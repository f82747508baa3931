"""Associative recall (P1 §3.3 with the safari generator P1 used) and multi-query associative recall (zoology, P5).

**associative_recall** (P1: "vocab 40, length 382"; reference ``generate_assoc_recall`` with ``num_keys=1``):
19 keys ``a``–``s`` and 19 values ``A``–``S`` (plus ``>`` for the reference's ``=>`` and ``.`` for its no-op make
40). Each row draws a random key -> value map (values may repeat), ``input_seq_len / 2`` uniform keys each followed
by its value, then ``>``, a query key present in the context, and its value, the answer. Accuracy is on that last
symbol; training is plain language modelling over every position, as the reference trained.

**mqar** (zoology ``multiquery_ar``, DESIGN §4): ``num_kv_pairs`` distinct keys from ``[1, V/2)``, each followed by
a distinct value from ``[V/2, V)``; then every key is queried once, key ``i`` at offset ``2 g_i`` of the query
region, where the gap indices are drawn without replacement with ``p(g) ∝ g^(a - 1)``, ``g = 1 .. space``; the
other positions are uniform tokens from ``[0, V)``. The label (the key's value) sits at the query position. Token
``i`` is the character ``chr(0x4E00 + i)`` (:func:`.tokenizers.mqar_symbols`), so a row's ``text``
tokenizes to exactly zoology's ``inputs``. Gaps use Gumbel-top-k, which is exactly the successive sampling
without replacement of zoology's ``np.random.choice(replace=False, p=p)``; the first key's gap follows ``p``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping

import datasets
import numpy as np

from ...baselines.copying import associative_recall_answer, mqar_answer
from ..builder import RowBuilder, check_counts, split_stream
from ..family import TaskEntry
from .generative import GenerationTask, Query, full_training_example, span_features, span_queries
from .tokenizers import ASSOCIATIVE_RECALL_SYMBOLS, associative_recall_tokenizer, mqar_symbols, mqar_tokenizer

_VERSION = datasets.Version("1.0.0")  # bump whenever sampling changes
_KEYS, _VALUES = ASSOCIATIVE_RECALL_SYMBOLS[1:20], ASSOCIATIVE_RECALL_SYMBOLS[20:39]
_QUERY = ASSOCIATIVE_RECALL_SYMBOLS[39]
ZOOLOGY_CITATION = """@article{arora2023zoology,
  title={Zoology: Measuring and Improving Recall in Efficient Language Models},
  author={Arora, Simran and Eyuboglu, Sabri and Timalsina, Aman and Johnson, Isys and Poli, Michael and Zou, James
  and Rudra, Atri and R{\\'e}, Christopher}, journal={arXiv:2312.04927}, year={2023}}"""
AR_FIELDS: tuple[str, ...] = ("n_train", "n_validation", "n_test", "input_seq_len", "seed")
MQAR_FIELDS: tuple[str, ...] = AR_FIELDS + ("vocab_size", "num_kv_pairs", "power_a", "random_non_queries")


@dataclasses.dataclass
class RecallConfig(datasets.BuilderConfig):
    """Configuration of associative recall or MQAR.

    Args:
        task: ``associative_recall`` or ``mqar``.
        n_train, n_validation, n_test: rows per split.
        input_seq_len: AR: key and value tokens before the query (P1: 382); MQAR: zoology's ``input_seq_len``.
        vocab_size: MQAR's V (AR's vocabulary is fixed at 40).
        num_kv_pairs: MQAR: key-value pairs, each queried once.
        power_a: MQAR: query gaps have ``p(g) ∝ g^(a - 1)`` (zoology: 0.01; 1.0 is uniform).
        random_non_queries: MQAR: fill non-query positions with uniform tokens (zoology default) instead of 0.
        seed: the only source of randomness.
    """

    task: str = "associative_recall"
    n_train: int = 2500
    n_validation: int = 500
    n_test: int = 500
    input_seq_len: int = 382
    vocab_size: int = 40
    num_kv_pairs: int = 8
    power_a: float = 0.01
    random_non_queries: bool = True
    seed: int = 0


def validate_config(config: RecallConfig) -> None:
    """Raises ``ValueError`` naming the field, the value and what is allowed, for an invalid config."""
    if config.task not in ("associative_recall", "mqar"):
        raise ValueError(f"task={config.task!r} is not one of: associative_recall, mqar")
    check_counts(config, ("n_train", "n_validation", "n_test", "seed", "input_seq_len", "num_kv_pairs"))
    length, pairs, vocab = config.input_seq_len, config.num_kv_pairs, config.vocab_size
    if length < 2 or length % 2:
        raise ValueError(f"input_seq_len={length!r} is not allowed: expected an even integer >= 2")
    if config.task == "associative_recall":
        if vocab != 40:
            raise ValueError(f"vocab_size={vocab!r} is not allowed for associative_recall: it is fixed at 40")
        return
    mqar_symbols(vocab)  # raises for a V outside the character range
    if vocab <= length:
        raise ValueError(f"vocab_size={vocab} is not allowed: zoology needs vocab_size > input_seq_len ({length})")
    if not 1 <= pairs <= min(length // 4, vocab // 2 - 1):
        raise ValueError(
            f"num_kv_pairs={pairs} is not allowed: need 1 <= num_kv_pairs <= min(input_seq_len / 4, vocab_size / 2 - 1)"
        )
    if isinstance(config.power_a, bool) or not isinstance(config.power_a, (int, float)) or config.power_a <= 0:
        raise ValueError(f"power_a={config.power_a!r} is not allowed: expected a number > 0")


def associative_recall_row(rng: np.random.Generator, input_seq_len: int) -> dict:
    """One AR sequence ``k1 v1 ... kn vn > kq vq`` as a span row (the answer is ``vq``, no EOS).

    Args:
        rng: the only source of randomness.
        input_seq_len: key and value tokens before ``>`` (``n = input_seq_len / 2`` pairs).
    """
    mapping = rng.integers(0, len(_VALUES), size=len(_KEYS))  # key -> value, values may repeat
    keys = rng.integers(0, len(_KEYS), size=input_seq_len // 2)
    present = np.unique(keys)
    query = int(present[rng.integers(0, len(present))])
    body = "".join(_KEYS[k] + _VALUES[mapping[k]] for k in keys.tolist())
    text = body + _QUERY + _KEYS[query] + _VALUES[mapping[query]]
    return {"text": text, "answer_starts": [len(text) - 1], "answer_ends": [len(text)], "lengths": [input_seq_len]}


def distinct_draws(rng: np.random.Generator, n: int, low: int, high: int, k: int) -> np.ndarray:
    """``n`` rows of ``k`` distinct integers, uniform over ordered draws without replacement from ``[low, high)``.

    Whole rows with a repeat are redrawn (exact), or, when repeats are likely, rows come from random permutations.
    """
    size = high - low
    if np.prod(1 - np.arange(k) / size) < 0.1:
        chunk = max(1, (1 << 22) // size)  # rows per block of random permutations (bounded memory)
        blocks = [np.argsort(rng.random((min(chunk, n - i), size)), axis=1)[:, :k] for i in range(0, n, chunk)]
        return np.concatenate(blocks or [np.zeros((0, k), dtype=np.int64)]) + low
    out = rng.integers(low, high, size=(n, k))
    while True:
        ordered = np.sort(out, axis=1)
        bad = np.flatnonzero((ordered[:, 1:] == ordered[:, :-1]).any(axis=1))
        if not len(bad):
            return out
        out[bad] = rng.integers(low, high, size=(len(bad), k))


def gap_probabilities(space: int, power_a: float) -> np.ndarray:
    """zoology's ``p(g) ∝ g^(a - 1)`` over gap indices ``g = 1 .. space`` (array index ``g - 1``)."""
    p = power_a * np.arange(1, space + 1) ** (power_a - 1)
    return p / p.sum()


def mqar_arrays(rng: np.random.Generator, n: int, config: RecallConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """zoology's ``multiquery_ar`` for ``n`` rows.

    Returns:
        ``(inputs (n, L), query_positions (n, K), values (n, K))``: the value of query ``j`` is the label at
        ``query_positions[:, j]``.
    """
    length, pairs, vocab = config.input_seq_len, config.num_kv_pairs, config.vocab_size
    keys = distinct_draws(rng, n, 1, vocab // 2, pairs)  # (n, K)
    values = distinct_draws(rng, n, vocab // 2, vocab, pairs)  # (n, K)
    space = (length - 2 * pairs) // 2
    scores = np.log(gap_probabilities(space, config.power_a)) + rng.gumbel(size=(n, space))  # (n, space)
    gaps = np.argsort(-scores, axis=1, kind="stable")[:, :pairs]  # (n, K) successive draws, 0-based
    inputs = np.zeros((n, length), dtype=np.int64)
    inputs[:, 0 : 2 * pairs : 2], inputs[:, 1 : 2 * pairs : 2] = keys, values
    positions = 2 * pairs + 2 * gaps
    np.put_along_axis(inputs, positions, keys, axis=1)
    if config.random_non_queries:
        filler = rng.integers(0, vocab, size=inputs.shape)
        inputs = np.where(inputs == 0, filler, inputs)
    return inputs, positions, values


def iter_rows(config: RecallConfig, split: str) -> Iterator[dict]:
    """The rows of one split: ``default_rng([seed, crc32(task), s])`` with ``s`` = 0 train, 1 test, 2 validation."""
    rng = np.random.default_rng(split_stream(config.seed, split, config.task))
    count = {"train": config.n_train, "validation": config.n_validation, "test": config.n_test}[split]
    if config.task == "associative_recall":
        for _ in range(count):
            yield associative_recall_row(rng, config.input_seq_len)
        return
    symbols = np.array(mqar_symbols(config.vocab_size))
    inputs, positions, values = mqar_arrays(rng, count, config)
    for ids, where, answers in zip(inputs, positions.tolist(), values):
        yield {"text": "".join(symbols[ids]), "query_positions": where, "answers": "".join(symbols[answers])}


def mqar_queries(row: Mapping) -> list[Query]:
    """One query per key: the model reads the sequence up to the query key and must give its value."""
    length = len(row["text"])
    return [Query(row["text"][: q + 1], a, False, length) for q, a in zip(row["query_positions"], row["answers"])]


def mqar_training_example(row: Mapping) -> tuple[str, list]:
    """Loss at the query positions only (zoology labels; ``labels[q + 1]`` is predicted at position ``q``)."""
    labels = [None] * len(row["text"])
    for q, answer in zip(row["query_positions"], row["answers"]):
        labels[q + 1] = answer
    return row["text"], labels


class RecallBuilder(RowBuilder):
    """``datasets`` builder for ``associative_recall`` and ``mqar``. Instantiate it from the package.

    Args:
        config_name: ``associative_recall`` or ``mqar``.
        cache_dir: where ``datasets`` caches the prepared arrow files.
        **config_kwargs: overrides of :class:`RecallConfig` fields.
    """

    VERSION = _VERSION
    BUILDER_CONFIG_CLASS = RecallConfig
    BUILDER_CONFIGS = [
        RecallConfig(name="associative_recall", version=_VERSION, description="P1 §3.3: vocab 40, length 382"),
        RecallConfig(
            name="mqar", version=_VERSION, task="mqar", vocab_size=8192, input_seq_len=64, num_kv_pairs=8,
            n_train=20000, n_validation=500, n_test=1000, description="zoology multi-query associative recall",
        ),
    ]  # fmt: skip
    DEFAULT_CONFIG_NAME = "associative_recall"
    CITATION = ZOOLOGY_CITATION
    validate_config = staticmethod(validate_config)
    SPLIT_SIZE_FIELDS = ("n_train", "n_validation", "n_test")
    iter_rows = staticmethod(iter_rows)

    def _info(self) -> datasets.DatasetInfo:
        if self.config.task == "associative_recall":
            features = span_features()
        else:
            features = datasets.Features(
                {
                    "text": datasets.Value("string"),
                    "query_positions": datasets.List(datasets.Value("int32")),
                    "answers": datasets.Value("string"),
                }
            )
        return datasets.DatasetInfo(description=self.config.description, features=features, citation=self.CITATION)


SPECS: dict[str, GenerationTask] = {
    "associative_recall": GenerationTask(
        tokenizer=lambda config: associative_recall_tokenizer(),
        queries=lambda row: span_queries(row, eos=False, group_field="lengths"),
        training_example=full_training_example,
        group_by="length",
        train_max_group=lambda config: config.input_seq_len,
        description="language-model loss on every position (P1's AR training); accuracy on the last symbol",
        eos=False,
    ),
    "mqar": GenerationTask(
        tokenizer=lambda config: mqar_tokenizer(config.vocab_size),
        queries=mqar_queries,
        training_example=mqar_training_example,
        group_by="length",
        train_max_group=lambda config: config.input_seq_len,
        description="loss at the query positions only (zoology); accuracy over the queries",
        eos=False,
    ),
}
"""Task name -> how it is tokenized, trained on and scored."""

ENTRIES: dict[str, TaskEntry] = {
    "associative_recall": TaskEntry(
        RecallBuilder,
        "associative_recall",
        AR_FIELDS,
        spec=SPECS["associative_recall"],
        solver=associative_recall_answer,
    ),
    "mqar": TaskEntry(RecallBuilder, "mqar", MQAR_FIELDS, spec=SPECS["mqar"], solver=mqar_answer),
}
"""The registry entries of associative recall and MQAR."""
