"""The RegBench tokenizer: one character per token in the reference code's vocabulary order (DESIGN §5.1)."""

from __future__ import annotations

from ..char_tokenizer import char_tokenizer

REGBENCH_SYMBOLS: list[str] = ["."] + [chr(ord("a") + i) for i in range(18)] + ["|"]
"""The reference vocabulary in id order: `.` (padding, also eos) = 0, `a`..`r` = 1..18, `|` (delimiter) = 19."""


def regbench_tokenizer():
    """RegBench tokenizer with the reference ids: `.` (pad, also eos) = 0, a–r = 1–18, `|` = 19.

    Returns:
        A `PreTrainedTokenizerFast` over :data:`REGBENCH_SYMBOLS`.
    """
    return char_tokenizer(REGBENCH_SYMBOLS, pad_token=".", eos_token=".")
