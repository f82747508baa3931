"""Language modelling on real text (P1 §6, Table 2), with a byte-level BPE tokenizer trained on the training split.

P1 trains 340M-parameter RetNet, GLA and Llama models on SlimPajama with and without n-gram heads and compares their
perplexity. This task is the CPU-scale version of that setting: the documents of the shared text corpus
(:mod:`hf_icl.tasks.documents`, as `text_mixture`: `stdlib` docstrings under PSF-2.0 by default, a folder of
`*.txt`, or a `load_dataset` name), split by document (every 10th to test, the next to validation, the rest to
train), one row (`name`, `text`) per document.

Tokenisation (:mod:`.tokenizer`): a byte-level BPE with `vocab_size` entries including the end-of-text token
`<|endoftext|>` (pad and eos), trained on the training documents only, so no held-out text shapes the vocabulary;
it is cached as `tokenizer.json` in the builder's cache directory, beside the prepared splits, and reused.

Training data (:func:`token_blocks`): each document's ids plus eos, concatenated and cut into `block_size` blocks,
the remainder dropped (the `group_texts` step of transformers' `run_clm` example).
"""

from __future__ import annotations

import dataclasses
import itertools

import datasets
import numpy as np

from ..builder import ValidatedBuilder, check_counts, split_stream
from ..documents import load_documents, split_documents

_VERSION = datasets.Version("1.0.0")  # bump whenever the rows or the tokenizer training change
MIN_VOCAB_SIZE = 257
"""The 256 byte symbols of the ByteLevel alphabet plus the end-of-text token."""


@dataclasses.dataclass
class TextLMConfig(datasets.BuilderConfig):
    """One text language-modelling variant.

    Args:
        source: `stdlib`, a folder of `*.txt` files, or a `load_dataset` name (see `hf_icl.tasks.text_mixture`).
        source_config, source_split, text_column: for a `load_dataset` source.
        vocab_size: BPE vocabulary size, the byte alphabet and the end-of-text token included (≥ 257).
        block_size: tokens per training block (≥ 2).
        seed: the order of the documents within each split, so the block boundaries move with it.
    """

    source: str = "stdlib"
    source_config: str | None = None
    source_split: str = "train"
    text_column: str = "text"
    vocab_size: int = 1024
    block_size: int = 128
    seed: int = 0


CONFIG_FIELDS: tuple[str, ...] = (
    "source",
    "source_config",
    "source_split",
    "text_column",
    "vocab_size",
    "block_size",
    "seed",
)
"""Keyword overrides accepted by the builder (and ``load_task("text_lm", ...)``)."""


def validate_config(config: TextLMConfig) -> None:
    """Raises ``ValueError`` naming the field, the value and what is allowed."""
    check_counts(config, ("seed", "vocab_size", "block_size"))
    if config.vocab_size < MIN_VOCAB_SIZE:
        raise ValueError(
            f"vocab_size={config.vocab_size} is not allowed: expected an integer >= {MIN_VOCAB_SIZE} "
            "(256 byte symbols and the end-of-text token)"
        )
    if config.block_size < 2:
        raise ValueError(f"block_size={config.block_size} is not allowed: expected an integer >= 2")


def document_ids(tokenizer, texts) -> list[list[int]]:
    """Each document's token ids followed by the eos id.

    Args:
        tokenizer: the task tokenizer.
        texts: list of documents.
    """
    return [ids + [tokenizer.eos_token_id] for ids in tokenizer(list(texts))["input_ids"]]


def token_blocks(token_lists, block_size: int) -> list[list[int]]:
    """Concatenate the token lists and cut the stream into consecutive `block_size` blocks, dropping the remainder.

    Args:
        token_lists: iterable of token-id lists (documents, eos included).
        block_size: tokens per block.
    """
    stream = list(itertools.chain.from_iterable(token_lists))
    usable = len(stream) // block_size * block_size
    return [stream[start : start + block_size] for start in range(0, usable, block_size)]


class TextLMBuilder(ValidatedBuilder):
    """``datasets`` builder for text language modelling: one row per document. Instantiate it from the package.

    Args:
        config_name: `default` (vocabulary 1024, blocks of 128 tokens).
        cache_dir: the ``datasets`` cache directory.
        **config_kwargs: overrides of :class:`TextLMConfig` fields.
    """

    VERSION = _VERSION
    BUILDER_CONFIG_CLASS = TextLMConfig
    BUILDER_CONFIGS = [TextLMConfig(name="default", version=_VERSION, description="BPE 1024, blocks of 128 tokens")]
    DEFAULT_CONFIG_NAME = "default"
    validate_config = staticmethod(validate_config)

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description="Documents split by document for language modelling (P1 §6, Table 2).",
            features=datasets.Features({"name": datasets.Value("string"), "text": datasets.Value("string")}),
        )

    def _split_generators(self, dl_manager):
        # The documents are read and checked here, before `datasets` opens a split file, so a corpus too small to
        # split fails with this ValueError rather than a wrapped generation error.
        config = self.config
        documents = load_documents(config)
        generators = super()._split_generators(dl_manager)
        for generator in generators:
            split = generator.gen_kwargs["split"]
            names = [name for name in split_documents(documents, split) if documents[name]]
            if not names:
                raise ValueError(
                    f"source={config.source!r} gives no non-empty {split} document ({len(documents)} documents in "
                    "all); documents are split by document (every 10th to test, the next to validation), so give "
                    "at least 3"
                )
            generator.gen_kwargs["documents"] = {name: documents[name] for name in names}
        return generators

    def _generate_examples(self, split: str, documents: dict[str, str]):
        names = list(documents)
        order = np.random.default_rng(split_stream(self.config.seed, split)).permutation(len(names))
        for i, index in enumerate(order):
            yield datasets.builder.Key(0, i), {"name": names[index], "text": documents[names[index]]}
