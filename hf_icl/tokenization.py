"""Character-level tokenizers (`PreTrainedTokenizerFast` over a `tokenizers` WordLevel model), one per task family.

One character is one token. Ids follow each task's reference vocabulary order; special tokens not in that
vocabulary are appended after it.
"""

from __future__ import annotations

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

REGBENCH_SYMBOLS = ["."] + [chr(ord("a") + i) for i in range(18)] + ["|"]
FORMAL_LANGUAGE_SYMBOLS = [".", "0", "1", "2", "3", "4", "+", "-", "*", "?"]
COPY_BOS, COPY_SEP, COPY_EOS, COPY_PAD = "$", "|", ".", "*"
COPY_SYMBOLS = [chr(ord("a") + i) for i in range(26)] + [COPY_BOS, COPY_SEP, COPY_EOS, COPY_PAD]
"""P4 reference order: a–z = 0–25, `$` (BOS) = 26, `|` (separator) = 27, `.` (EOS) = 28, `*` (pad) = 29."""
PHONEBOOK_SYMBOLS = (
    [chr(ord("A") + i) for i in range(26)] + [chr(ord("a") + i) for i in range(26)] + list("0123456789 :-\n.*")
)
ASSOCIATIVE_RECALL_SYMBOLS = ["."] + [chr(ord("a") + i) for i in range(19)] + [chr(ord("A") + i) for i in range(19)]
ASSOCIATIVE_RECALL_SYMBOLS += [">"]
"""P1's AR vocabulary of 40: `.` (no-op, pad, eos), 19 keys a–s, 19 values A–S, `>` (the query prefix `=>`)."""
ICL_ARITHMETIC_SYMBOLS = list("0123456789*=+-|#") + ["."]
"""P3 App. D: digits, `*`, `=`, the answer's sign, `|` after each example, `#` after each task; `.` is pad and eos."""
TEXT_SYMBOLS = [chr(c) for c in range(32, 127)] + ["\n", "\u2403"]
"""Printable ASCII and newline (text_mixture); `␃` (U+2403, end of text) is pad and eos."""
MQAR_FIRST_CODE_POINT = 0x4E00
"""MQAR token id i is the character chr(0x4E00 + i) (CJK block: single code points, no normalisation)."""
MQAR_MAX_VOCAB = 0xA000 - MQAR_FIRST_CODE_POINT


def char_tokenizer(symbols: list[str], pad_token: str, eos_token: str, bos_token: str | None = None):
    """Build a character-level fast tokenizer whose ids are the positions in `symbols`.

    Args:
        symbols: single-character tokens in id order (specials missing from it are appended).
        pad_token: padding token (also used by `pipeline` batching).
        eos_token: end-of-sequence token (generation stops there).
        bos_token: optional beginning-of-sequence token.
    """
    vocab = list(symbols)
    for special in (pad_token, eos_token, bos_token):
        if special is not None and special not in vocab:
            vocab.append(special)
    for symbol in vocab:
        if len(symbol) != 1:
            raise ValueError(f"symbol {symbol!r} is not a single character; char_tokenizer needs one-char tokens")
    backend = Tokenizer(models.WordLevel({s: i for i, s in enumerate(vocab)}, unk_token=None))
    backend.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")  # every char, "\n" too
    backend.decoder = decoders.Fuse()
    specials = {"pad_token": pad_token, "eos_token": eos_token}
    if bos_token is not None:
        specials["bos_token"] = bos_token
    return PreTrainedTokenizerFast(tokenizer_object=backend, model_max_length=1 << 30, **specials)


def regbench_tokenizer():
    """RegBench tokenizer with the reference ids: `.` (pad, also eos) = 0, a–r = 1–18, `|` = 19."""
    return char_tokenizer(REGBENCH_SYMBOLS, pad_token=".", eos_token=".")


def formal_language_tokenizer():
    """Regular-language suite tokenizer (P2 §5.1): `.` (pad, also eos) = 0, `0`–`4` = 1–5, `+ - *` = 6–8, `?` = 9.

    Returns:
        A `PreTrainedTokenizerFast` over :data:`FORMAL_LANGUAGE_SYMBOLS`.
    """
    return char_tokenizer(FORMAL_LANGUAGE_SYMBOLS, pad_token=".", eos_token=".")


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


def icl_arithmetic_tokenizer():
    """ICL arithmetic (P3 App. D): `0`–`9` = 0–9, `* = + - | #` = 10–15, `.` (pad, also eos) = 16."""
    return char_tokenizer(ICL_ARITHMETIC_SYMBOLS, pad_token=".", eos_token=".")


def text_tokenizer():
    """Character-level text (text_mixture): printable ASCII = 0–94, newline = 95, `␃` (pad, also eos) = 96.

    Other characters must be mapped into this alphabet first (`hf_icl.tasks.text_mixture.to_alphabet`).
    """
    return char_tokenizer(TEXT_SYMBOLS, pad_token="\u2403", eos_token="\u2403")
