"""The tokenizers of the generation tasks: one character per token, in each reference vocabulary's order.

Copying and lookups follow P4's code, associative recall P1's vocabulary of 40, MQAR zoology's token ids (each id one
CJK character, so a row stays a string).
"""

from __future__ import annotations

from ...baselines.copying import COPY_BOS, COPY_EOS, COPY_SEP
from ..char_tokenizer import char_tokenizer

COPY_PAD = "*"
COPY_SYMBOLS = [chr(ord("a") + i) for i in range(26)] + [COPY_BOS, COPY_SEP, COPY_EOS, COPY_PAD]
"""P4 reference order: a–z = 0–25, `$` (BOS) = 26, `|` (separator) = 27, `.` (EOS) = 28, `*` (pad) = 29."""
PHONEBOOK_SYMBOLS = (
    [chr(ord("A") + i) for i in range(26)] + [chr(ord("a") + i) for i in range(26)] + list("0123456789 :-\n.*")
)
ASSOCIATIVE_RECALL_SYMBOLS = ["."] + [chr(ord("a") + i) for i in range(19)] + [chr(ord("A") + i) for i in range(19)]
ASSOCIATIVE_RECALL_SYMBOLS += [">"]
"""P1's AR vocabulary of 40: `.` (no-op, pad, eos), 19 keys a–s, 19 values A–S, `>` (the query prefix `=>`)."""
MQAR_FIRST_CODE_POINT = 0x4E00
"""MQAR token id i is the character chr(0x4E00 + i) (CJK block: single code points, no normalisation)."""
MQAR_MAX_VOCAB = 0xA000 - MQAR_FIRST_CODE_POINT

__all__ = [
    "ASSOCIATIVE_RECALL_SYMBOLS",
    "COPY_BOS",
    "COPY_EOS",
    "COPY_PAD",
    "COPY_SEP",
    "COPY_SYMBOLS",
    "MQAR_FIRST_CODE_POINT",
    "MQAR_MAX_VOCAB",
    "PHONEBOOK_SYMBOLS",
    "associative_recall_tokenizer",
    "copy_tokenizer",
    "mqar_symbols",
    "mqar_tokenizer",
    "phonebook_tokenizer",
]


def copy_tokenizer():
    """Copying and lookup tasks (P4 §3): a–z, `$` (bos), `|`, `.` (eos), `*` (pad), in the reference order."""
    return char_tokenizer(COPY_SYMBOLS, pad_token=COPY_PAD, eos_token=COPY_EOS, bos_token=COPY_BOS)


def phonebook_tokenizer():
    """Phone-book lookup (P4 §4.3): letters, digits, space, `:`, `-`, newline; `.` (eos), `*` (pad)."""
    return char_tokenizer(PHONEBOOK_SYMBOLS, pad_token="*", eos_token=".")


def associative_recall_tokenizer():
    """Associative recall with P1's vocabulary of 40 (:data:`ASSOCIATIVE_RECALL_SYMBOLS`); `.` is pad and eos."""
    return char_tokenizer(ASSOCIATIVE_RECALL_SYMBOLS, pad_token=".", eos_token=".")


def mqar_symbols(vocab_size: int) -> list[str]:
    """Characters of the MQAR token ids 0 .. vocab_size - 1 (see :data:`MQAR_FIRST_CODE_POINT`).

    Args:
        vocab_size: zoology's V (at most :data:`MQAR_MAX_VOCAB`).
    """
    if not 1 <= vocab_size <= MQAR_MAX_VOCAB:
        raise ValueError(f"vocab_size={vocab_size} is not allowed: expected 1 <= vocab_size <= {MQAR_MAX_VOCAB}")
    return [chr(MQAR_FIRST_CODE_POINT + i) for i in range(vocab_size)]


def mqar_tokenizer(vocab_size: int):
    """MQAR tokenizer: ids 0 .. V-1 are zoology's token ids, then `.` (pad and eos) = V.

    Args:
        vocab_size: zoology's V.
    """
    return char_tokenizer(mqar_symbols(vocab_size), pad_token=".", eos_token=".")
