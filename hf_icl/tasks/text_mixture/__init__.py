"""Text mixture (P3 §4.1, §4.3) as one task family: language modelling on two joined excerpts of different documents.

- :mod:`.text_mixture`: the ``datasets`` builder (documents from :mod:`hf_icl.tasks.documents`); :mod:`.tokenizer`;
- :mod:`.evaluation`: cross-entropy overall, on the first excerpt and after the join, with a unigram baseline;
  :mod:`.export`: ``python -m hf_icl.export text_mixture``;
- :mod:`.spec`: the :class:`~hf_icl.tasks.family.TaskFamily`, registered here.

The corpus names (``to_alphabet``, ``load_documents``, ``split_documents``, ...) were defined in this module before
the shared corpus, and are still exported from here.
"""

from ..documents import (
    STDLIB_MODULES,
    corpus_licence,
    documents_version,
    load_documents,
    split_documents,
    stdlib_documents,
    to_alphabet,
)
from ..family import register_family
from .spec import FAMILY
from .text_mixture import CONFIG_FIELDS, TextMixtureBuilder, TextMixtureConfig, sample_mixtures, validate_config
from .tokenizer import TEXT_SYMBOLS, text_tokenizer

register_family(FAMILY)

__all__ = [
    "CONFIG_FIELDS",
    "FAMILY",
    "STDLIB_MODULES",
    "TEXT_SYMBOLS",
    "TextMixtureBuilder",
    "TextMixtureConfig",
    "corpus_licence",
    "documents_version",
    "load_documents",
    "sample_mixtures",
    "split_documents",
    "stdlib_documents",
    "text_tokenizer",
    "to_alphabet",
    "validate_config",
]
