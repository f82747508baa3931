"""The tokenizer of the regular-language suite (P2 §5.1): one character per token."""

from __future__ import annotations

from ..char_tokenizer import char_tokenizer

FORMAL_LANGUAGE_SYMBOLS: list[str] = [".", "0", "1", "2", "3", "4", "+", "-", "*", "?"]
"""Id order: `.` (pad, also eos) = 0, the symbols `0`–`4` = 1–5, the operators `+ - *` = 6–8, the query `?` = 9."""


def formal_language_tokenizer():
    """Regular-language suite tokenizer (P2 §5.1): `.` (pad, also eos) = 0, `0`–`4` = 1–5, `+ - *` = 6–8, `?` = 9.

    Returns:
        A `PreTrainedTokenizerFast` over :data:`FORMAL_LANGUAGE_SYMBOLS`.
    """
    return char_tokenizer(FORMAL_LANGUAGE_SYMBOLS, pad_token=".", eos_token=".")
