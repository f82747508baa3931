"""The character-level text tokenizer of `text_mixture`: the corpus alphabet plus an end-of-text token."""

from __future__ import annotations

from ..char_tokenizer import char_tokenizer
from ..documents import ALPHABET

TEXT_SYMBOLS: list[str] = [*ALPHABET, "\u2403"]
"""Printable ASCII and newline (:data:`hf_icl.tasks.documents.ALPHABET`); `␃` (U+2403, end of text) is pad and eos."""


def text_tokenizer():
    """Character-level text: printable ASCII = 0–94, newline = 95, `␃` (pad, also eos) = 96.

    Other characters must be mapped into this alphabet first (:func:`hf_icl.tasks.documents.to_alphabet`).

    Returns:
        A `PreTrainedTokenizerFast` over :data:`TEXT_SYMBOLS`.
    """
    return char_tokenizer(TEXT_SYMBOLS, pad_token="\u2403", eos_token="\u2403")
