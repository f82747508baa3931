"""Character-level tokenizers: a `PreTrainedTokenizerFast` over a `tokenizers` WordLevel model (DESIGN §2.1).

One character is one token and the ids are the positions in a family's symbol list (its reference vocabulary
order); special tokens missing from that list are appended after it. Each family's tokenizer module calls
:func:`char_tokenizer` with its symbols.
"""

from __future__ import annotations

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast


def char_tokenizer(symbols: list[str], pad_token: str, eos_token: str, bos_token: str | None = None):
    """Build a character-level fast tokenizer whose ids are the positions in `symbols`.

    Args:
        symbols: single-character tokens in id order (specials missing from it are appended).
        pad_token: padding token (also used by `pipeline` batching).
        eos_token: end-of-sequence token (generation stops there).
        bos_token: optional beginning-of-sequence token.

    Returns:
        A `PreTrainedTokenizerFast`.
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
