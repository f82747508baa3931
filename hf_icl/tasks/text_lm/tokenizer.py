"""The text_lm tokenizer: a byte-level BPE trained on the task's training documents only (P1 §6, Table 2).

:func:`train_bpe` trains it (`tokenizers`: `models.BPE`, `trainers.BpeTrainer`, the ByteLevel pre-tokenizer and
decoder) with `vocab_size` entries including the end-of-text token; :func:`text_lm_tokenizer` caches it as
`tokenizer.json` beside a prepared builder's splits and reuses it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from ...utils.atomic_files import atomic_path

if TYPE_CHECKING:
    from .text_lm import TextLMBuilder

END_OF_TEXT = "<|endoftext|>"
"""The one special token: id 0, end of every document (eos) and padding."""
TOKENIZER_FILE = "tokenizer.json"


def wrap_tokenizer(backend: Tokenizer) -> PreTrainedTokenizerFast:
    """A `PreTrainedTokenizerFast` over a trained byte-level BPE, with `<|endoftext|>` as pad and eos.

    Args:
        backend: the `tokenizers.Tokenizer` (from :func:`train_bpe` or `Tokenizer.from_file`).
    """
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token=END_OF_TEXT,
        eos_token=END_OF_TEXT,
        model_max_length=1 << 30,  # documents are tokenised whole, then cut into blocks
        clean_up_tokenization_spaces=False,  # decode(encode(text)) == text
    )


def train_bpe(texts, vocab_size: int) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE on `texts` (deterministic: same texts, same vocabulary and merges).

    Args:
        texts: iterable of training documents.
        vocab_size: entries including the 256 byte symbols and `<|endoftext|>` (fewer if the text runs out of
            pairs to merge).
    """
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[END_OF_TEXT],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(texts, trainer)
    return wrap_tokenizer(backend)


def text_lm_tokenizer(builder: TextLMBuilder, train_rows) -> PreTrainedTokenizerFast:
    """The BPE of a prepared builder: read from its cache directory, or trained on `train_rows` and cached there.

    Args:
        builder: a prepared :class:`TextLMBuilder` (its `cache_dir` holds the splits).
        train_rows: its training split (documents with a `text` column).
    """
    path = Path(builder.cache_dir) / TOKENIZER_FILE
    if path.is_file():
        return wrap_tokenizer(Tokenizer.from_file(str(path)))
    tokenizer = train_bpe(train_rows["text"], builder.config.vocab_size)
    with atomic_path(path) as tmp:
        tokenizer.backend_tokenizer.save(str(tmp))
    return tokenizer
