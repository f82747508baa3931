"""RegBench: in-context language learning of random probabilistic regular languages.

P1 (In-Context Language Learning) §3 defines the benchmark; DESIGN §5.1 fixes the reference code's
effective sampling ranges and §5.2 the exact next-token ground truth. This module holds the public
vocabulary, the ``datasets`` builder with its named configs, and :func:`next_token_truth`.
The sampler itself lives in :mod:`hf_icl.tasks.regbench.sampling`.

Splits are disjoint up to isomorphism: test automata come from ``default_rng([seed, 1])``, validation
from ``[seed, 2]`` and train from ``[seed, 0]``, each rejecting automata isomorphic to any taken before
(test first), so the test set does not depend on ``n_train``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import datasets
import numpy as np

from ..builder import ValidatedBuilder, check_counts, check_range, split_stream
from .sampling import SamplingRanges, sample_automata, sample_texts
from .tokenizer import REGBENCH_SYMBOLS

REGBENCH_VOCAB: list[str] = REGBENCH_SYMBOLS
"""Reference token order (shared with the tokenizer): ``.`` = 0 (pad), ``a``..``r`` = 1..18, ``|`` = 19."""

PAD_ID, SEP_ID, VOCAB_SIZE = 0, 19, len(REGBENCH_VOCAB)
_TOKEN_ID = np.full(256, -1, dtype=np.int64)
_TOKEN_ID[[ord(t) for t in REGBENCH_VOCAB]] = np.arange(VOCAB_SIZE)

CITATION = """@inproceedings{akyurek2024icll,
  title={In-Context Language Learning: Architectures and Algorithms},
  author={Aky{\\"u}rek, Ekin and Wang, Bailin and Kim, Yoon and Andreas, Jacob},
  booktitle={ICML}, year={2024}}"""
"""BibTeX of P1, the paper that defines RegBench."""

_VERSION = datasets.Version("1.0.0")  # bump whenever sampling changes
_PAPER_RANGES = dataclasses.replace(SamplingRanges(), max_edges=4, max_strings=20, max_length=50)


@dataclasses.dataclass
class RegBenchConfig(datasets.BuilderConfig, SamplingRanges):
    """Configuration of one RegBench variant: split sizes and seed, plus the sampling ranges it inherits.

    Args:
        n_train: number of training automata (one problem instance each).
        n_test: number of test automata.
        n_validation: number of validation automata.
        seed: the only source of randomness.
        min_states .. max_length: inclusive sampling ranges, inherited from
            :class:`~hf_icl.tasks.regbench.sampling.SamplingRanges` (reference defaults).
    """

    n_train: int = 2500
    n_test: int = 500
    n_validation: int = 500
    seed: int = 0

    @property
    def ranges(self) -> SamplingRanges:
        """The sampling ranges of this config as a :class:`SamplingRanges`."""
        return SamplingRanges(**{f.name: getattr(self, f.name) for f in dataclasses.fields(SamplingRanges)})


CONFIG_FIELDS: tuple[str, ...] = ("n_train", "n_test", "n_validation", "seed") + tuple(
    f.name for f in dataclasses.fields(SamplingRanges)
)
"""Keyword overrides accepted by :class:`RegBenchBuilder` (and ``load_task("regbench", ...)``)."""


def validate_config(config: RegBenchConfig) -> None:
    """Raises ``ValueError`` naming the field, the value and what is allowed, for an invalid config.

    Args:
        config: the config to check.
    """
    check_counts(config, ("n_train", "n_test", "n_validation", "seed"))
    for key, lowest in {"states": 2, "alphabet": 1, "edges": 1, "strings": 1, "length": 1}.items():
        check_range(config, f"min_{key}", f"max_{key}", lowest)
    if config.max_alphabet > 18:
        raise ValueError(f"max_alphabet={config.max_alphabet} is not allowed: the symbols are a..r (<= 18)")
    if config.min_edges > min(config.min_alphabet, config.min_states - 1):
        raise ValueError(
            f"min_edges={config.min_edges} is not allowed: must be <= min_alphabet ({config.min_alphabet}) "
            f"and <= min_states - 1 ({config.min_states - 1})"
        )


def generate_regbench(config: RegBenchConfig) -> dict[str, list[dict]]:
    """Generates all splits of a config as lists of rows.

    Args:
        config: a validated :class:`RegBenchConfig`.

    Returns:
        ``{"train": rows, "validation": rows, "test": rows}``; each row has ``text``, ``num_states``,
        ``start_state``, ``transitions`` ([{src, symbol, dst}]) and ``alphabet``.
    """
    validate_config(config)
    ranges, taken, splits = config.ranges, set(), {}
    for split, count in (
        ("test", config.n_test),
        ("validation", config.n_validation),
        ("train", config.n_train),
    ):
        rng = np.random.default_rng(split_stream(config.seed, split))
        automata = sample_automata(rng, ranges, count, taken)
        texts = sample_texts(rng, ranges, automata)
        splits[split] = [
            {
                "text": text,
                "num_states": aut.num_states,
                "start_state": 0,
                "transitions": [{"src": s, "symbol": REGBENCH_VOCAB[c], "dst": d} for s, c, d in aut.transitions],
                "alphabet": [REGBENCH_VOCAB[c] for c in aut.alphabet],
            }
            for aut, text in zip(automata, texts)
        ]
    return splits


class RegBenchBuilder(ValidatedBuilder):
    """``datasets`` builder for RegBench (P1 §3.3). Instantiate it from the package, not via a script.

    Args:
        config_name: one of ``n150 … n40000`` (reference ranges) or ``paper_ranges``; default ``n2500``.
        cache_dir: where ``datasets`` caches the prepared arrow files.
        **config_kwargs: overrides of :class:`RegBenchConfig` fields, e.g. ``n_train=100, seed=3``.
    """

    VERSION = _VERSION
    BUILDER_CONFIG_CLASS = RegBenchConfig
    BUILDER_CONFIGS = [
        RegBenchConfig(name=f"n{n}", version=_VERSION, n_train=n, description=f"{n} training automata")
        for n in (150, 500, 1000, 2500, 5000, 10000, 20000, 40000)
    ] + [
        RegBenchConfig(
            name="paper_ranges",
            version=_VERSION,
            n_train=2500,
            description="ranges as stated in the paper's text: 1-4 edges, 10-20 strings, lengths 1-50",
            **{f.name: getattr(_PAPER_RANGES, f.name) for f in dataclasses.fields(SamplingRanges)},
        )
    ]
    DEFAULT_CONFIG_NAME = "n2500"

    def __init__(self, *args, **kwargs):
        self._splits: dict[str, list[dict]] | None = None
        super().__init__(*args, **kwargs)

    validate_config = staticmethod(validate_config)  # runs before the cache directory is touched
    SPLIT_SIZE_FIELDS = ("n_train", "n_validation", "n_test")

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description="Problem instances of random probabilistic regular languages (P1 §3).",
            features=datasets.Features(
                {
                    "text": datasets.Value("string"),
                    "num_states": datasets.Value("int32"),
                    "start_state": datasets.Value("int32"),
                    "transitions": datasets.List(
                        {
                            "src": datasets.Value("int32"),
                            "symbol": datasets.Value("string"),
                            "dst": datasets.Value("int32"),
                        }
                    ),
                    "alphabet": datasets.List(datasets.Value("string")),
                }
            ),
            citation=CITATION,
        )

    def _generate_examples(self, split: str):
        if self._splits is None:  # all splits at once: train rejects automata taken by test/validation
            self._splits = generate_regbench(self.config)
        for i, row in enumerate(self._splits[split]):
            yield datasets.builder.Key(0, i), row


def instance_statistics(rows) -> dict[str, float]:
    """Summary statistics of a split, to compare with DESIGN §5.1's reference figures.

    Args:
        rows: a RegBench split (``datasets.Dataset`` or list of rows).

    Returns:
        ``instances``, ``mean_tokens``, ``mean_strings``, ``mean_string_length``, ``mean_states``
        (after minimisation) and ``separator_share`` (fraction of tokens that are ``|``).
    """
    texts = list(rows["text"]) if isinstance(rows, datasets.Dataset) else [r["text"] for r in rows]
    states = list(rows["num_states"]) if isinstance(rows, datasets.Dataset) else [r["num_states"] for r in rows]
    tokens = np.array([len(t) for t in texts])  # (N,)
    seps = np.array([t.count("|") for t in texts])  # (N,)
    return {
        "instances": len(texts),
        "mean_tokens": float(tokens.mean()),
        "mean_strings": float((seps + 1).mean()),
        "mean_string_length": float((tokens - seps).sum() / (seps + 1).sum()),
        "mean_states": float(np.mean(states)),
        "separator_share": float(seps.sum() / tokens.sum()),
    }


def _num_states(row: Mapping) -> int:
    return 1 + max([row["start_state"]] + [max(e["src"], e["dst"]) for e in row["transitions"]])


def automaton_states(row: Mapping, length: int | None = None) -> np.ndarray:
    """The automaton's state after each token of a RegBench row (after ``|``: the start state).

    Args:
        row: mapping with ``text``, ``start_state`` and ``transitions`` ([{src, symbol, dst}]).
        length: number of leading tokens to run (default: all of ``text``).

    Returns:
        Array of shape ``(length,)``: entry ``i`` is the state after reading ``text[: i + 1]``, the state that
        emits ``text[i + 1]``.
    """
    delta = [[-1] * VOCAB_SIZE for _ in range(_num_states(row))]
    for e in row["transitions"]:
        delta[e["src"]][int(_TOKEN_ID[ord(e["symbol"])])] = e["dst"]
    ids = _TOKEN_ID[np.frombuffer(row["text"].encode("ascii"), dtype=np.uint8)].tolist()  # (T,)
    length = len(ids) if length is None else length
    states = np.empty(max(length, 0), dtype=np.int64)  # (length,)
    start = state = row["start_state"]
    for i, tok in enumerate(ids[:length]):
        state = start if tok == SEP_ID else delta[state][tok]
        if state < 0:
            raise ValueError(f"text[{i}]={row['text'][i]!r} is not an out-edge symbol of the current state")
        states[i] = state
    return states


def next_token_truth(row: Mapping) -> np.ndarray:
    """Exact next-token distributions of a RegBench row (DESIGN §5.2).

    Row ``i`` is the truth for predicting ``text[i + 1]`` after reading ``text[: i + 1]``: the automaton
    is run on the current string's prefix (after ``|`` the current string is empty, so the start state),
    and each of the state's ``k`` out-edge symbols gets ``1 / k``. ``|`` never has true probability.

    Args:
        row: mapping with ``text``, ``start_state`` and ``transitions`` ([{src, symbol, dst}]).

    Returns:
        Array of shape ``(len(text) - 1, 20)`` in :data:`REGBENCH_VOCAB` order.
    """
    dist = np.zeros((_num_states(row), VOCAB_SIZE))  # (S, V) uniform over out-edge symbols
    for e in row["transitions"]:
        dist[e["src"], int(_TOKEN_ID[ord(e["symbol"])])] = 1.0
    dist /= np.maximum(dist.sum(axis=1, keepdims=True), 1.0)
    return dist[automaton_states(row, len(row["text"]) - 1)]  # (T-1, V)
