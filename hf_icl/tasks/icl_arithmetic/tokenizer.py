"""The ICL-arithmetic tokenizer (P3 App. D): one character per token."""

from __future__ import annotations

from ..char_tokenizer import char_tokenizer

ICL_ARITHMETIC_SYMBOLS: list[str] = list("0123456789*=+-|#") + ["."]
"""P3 App. D: digits, `*`, `=`, the answer's sign, `|` after each example, `#` after each task; `.` is pad and eos."""


def icl_arithmetic_tokenizer():
    """ICL arithmetic (P3 App. D): `0`–`9` = 0–9, `* = + - | #` = 10–15, `.` (pad, also eos) = 16.

    Returns:
        A `PreTrainedTokenizerFast` over :data:`ICL_ARITHMETIC_SYMBOLS`.
    """
    return char_tokenizer(ICL_ARITHMETIC_SYMBOLS, pad_token=".", eos_token=".")
