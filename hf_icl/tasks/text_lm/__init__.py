"""Text language modelling (P1 §6, Table 2) as one task family: next-token prediction on real text with a BPE.

- :mod:`.text_lm`: the ``datasets`` builder (one row per document of :mod:`hf_icl.tasks.documents`) and the
  training blocks; :mod:`.tokenizer`: the byte-level BPE trained on the training documents;
- :mod:`.evaluation`: perplexity with a unigram baseline; :mod:`.export`: ``python -m hf_icl.export text_lm``;
- :mod:`.spec`: the :class:`~hf_icl.tasks.family.TaskFamily`, registered here.
"""

from ..family import register_family
from .spec import FAMILY
from .text_lm import (
    CONFIG_FIELDS,
    MIN_VOCAB_SIZE,
    TextLMBuilder,
    TextLMConfig,
    document_ids,
    token_blocks,
    validate_config,
)
from .tokenizer import END_OF_TEXT, TOKENIZER_FILE, text_lm_tokenizer, train_bpe, wrap_tokenizer

register_family(FAMILY)

__all__ = [
    "CONFIG_FIELDS",
    "END_OF_TEXT",
    "FAMILY",
    "MIN_VOCAB_SIZE",
    "TOKENIZER_FILE",
    "TextLMBuilder",
    "TextLMConfig",
    "document_ids",
    "text_lm_tokenizer",
    "token_blocks",
    "train_bpe",
    "validate_config",
    "wrap_tokenizer",
]
