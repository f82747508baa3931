"""Character-level tokenizers (`PreTrainedTokenizerFast` over a `tokenizers` WordLevel model), one per task family.

One character is one token. Ids follow each task's reference vocabulary order; special tokens not in that
vocabulary are appended after it.
"""

from __future__ import annotations

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

REGBENCH_SYMBOLS = ["."] + [chr(ord("a") + i) for i in range(18)] + ["|"]
FORMAL_LANGUAGE_SYMBOLS = [".", "0", "1", "2", "3", "4", "+", "-", "*", "?"]


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
    backend.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
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
