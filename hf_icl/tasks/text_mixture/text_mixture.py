"""Text mixture (P3, Learning Fast and Slow, §4.1, §4.3): two excerpts of different documents joined at a cut.

Each row cuts a first document's excerpt at a token position drawn uniformly from [l_start, l_finish], appends an
excerpt of a second document, and truncates the result at l_max tokens (P3: 256, 384, 512). The join happens after
tokenisation; text here is tokenised one character per token (:mod:`.tokenizer`), so the cut is also a character
index, stored per row (`cut`) with the two documents' names. The documents and their split come from the shared
text corpus (:mod:`hf_icl.tasks.documents`: the standard library's docstrings by default, a folder of `*.txt` or a
`load_dataset` name).
"""

from __future__ import annotations

import dataclasses

import datasets
import numpy as np

from ..builder import ValidatedBuilder, check_counts, check_range, split_stream
from ..documents import load_documents, split_documents

_VERSION = datasets.Version("1.0.0")  # bump whenever sampling changes


def split_rng(config, split: str) -> np.random.Generator:
    """The random stream of one split's rows (the builder's, so an analysis can redraw them without the cache)."""
    return np.random.default_rng(split_stream(config.seed, split))


@dataclasses.dataclass
class TextMixtureConfig(datasets.BuilderConfig):
    """One text-mixture variant.

    Args:
        source: `stdlib`, a folder of `*.txt` files, or a `load_dataset` name.
        source_config, source_split, text_column: for a `load_dataset` source.
        l_start, l_finish: the cut is drawn uniformly from [l_start, l_finish] (tokens of the first excerpt).
        l_max: tokens per row.
        n_train, n_validation, n_test: rows per split.
        seed: the only source of randomness (with the corpus).
    """

    source: str = "stdlib"
    source_config: str | None = None
    source_split: str = "train"
    text_column: str = "text"
    l_start: int = 256
    l_finish: int = 384
    l_max: int = 512
    n_train: int = 5000
    n_validation: int = 200
    n_test: int = 500
    seed: int = 0


CONFIG_FIELDS: tuple[str, ...] = tuple(
    f.name
    for f in dataclasses.fields(TextMixtureConfig)
    if f.name
    in (
        "source",
        "source_config",
        "source_split",
        "text_column",
        "l_start",
        "l_finish",
        "l_max",
        "n_train",
        "n_validation",
        "n_test",
        "seed",
    )
)
"""Keyword overrides accepted by the builder (and ``load_task("text_mixture", ...)``)."""


def validate_config(config: TextMixtureConfig) -> None:
    """Raises ``ValueError`` naming the field, the value and what is allowed."""
    check_counts(config, ("n_train", "n_validation", "n_test", "seed"))
    check_range(config, "l_start", "l_finish", 1)
    if config.l_max <= config.l_finish:
        raise ValueError(f"l_max={config.l_max} is not allowed: must exceed l_finish={config.l_finish}")


def sample_mixtures(documents: dict[str, str], names: list[str], config: TextMixtureConfig, count: int, rng):
    """`count` rows: `text` (l_max characters), `cut`, `first`, `second` (document names)."""
    long_enough = [n for n in names if len(documents[n]) >= config.l_max]
    if len(long_enough) < 2:
        raise ValueError(f"the source has {len(long_enough)} documents of ≥ l_max={config.l_max} tokens here; need 2")
    rows = []
    for _ in range(count):
        first, second = rng.choice(len(long_enough), size=2, replace=False)
        cut = int(rng.integers(config.l_start, config.l_finish + 1))
        parts = []
        for name, size in ((long_enough[first], cut), (long_enough[second], config.l_max - cut)):
            text = documents[name]
            start = int(rng.integers(0, len(text) - size + 1))
            parts.append(text[start : start + size])
        rows.append({"text": "".join(parts), "cut": cut, "first": long_enough[first], "second": long_enough[second]})
    return rows


class TextMixtureBuilder(ValidatedBuilder):
    """``datasets`` builder for text mixtures (P3 §4.1). Instantiate it from the package.

    Args:
        config_name: `default` (P3: cut in [256, 384], l_max = 512) or `short` (cut in [48, 80], l_max = 128, for
            CPU runs).
        cache_dir: the ``datasets`` cache directory.
        **config_kwargs: overrides of :class:`TextMixtureConfig` fields.
    """

    VERSION = _VERSION
    BUILDER_CONFIG_CLASS = TextMixtureConfig
    BUILDER_CONFIGS = [
        TextMixtureConfig(name="default", version=_VERSION, description="cut in [256, 384], 512 tokens (P3 §4.1)"),
        TextMixtureConfig(
            name="short",
            version=_VERSION,
            l_start=48,
            l_finish=80,
            l_max=128,
            description="cut in [48, 80], 128 tokens",
        ),
    ]
    DEFAULT_CONFIG_NAME = "default"
    validate_config = staticmethod(validate_config)
    SPLIT_SIZE_FIELDS = ("n_train", "n_validation", "n_test")

    def _info(self) -> datasets.DatasetInfo:
        features = {"text": datasets.Value("string"), "cut": datasets.Value("int32")}
        features |= {"first": datasets.Value("string"), "second": datasets.Value("string")}
        return datasets.DatasetInfo(
            description="Two excerpts of different documents joined at a random cut (P3 §4.1).",
            features=datasets.Features(features),
        )

    def _generate_examples(self, split: str):
        config = self.config
        documents = load_documents(config)
        count = {"train": config.n_train, "validation": config.n_validation, "test": config.n_test}[split]
        rng = split_rng(config, split)
        names = split_documents(documents, split)
        for i, row in enumerate(sample_mixtures(documents, names, config, count, rng)):
            yield datasets.builder.Key(0, i), row
