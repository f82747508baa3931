"""Tokenizers: reference ids, round trips, padding, and save/load next to a checkpoint."""

from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import AutoTokenizer

from hf_icl.tokenization import REGBENCH_SYMBOLS, char_tokenizer, regbench_tokenizer

REGBENCH_TEXT = st.text(alphabet="abcdefghijklmnopqr|", min_size=1, max_size=60)


def test_regbench_reference_ids():
    tokenizer = regbench_tokenizer()
    assert len(tokenizer) == 20
    assert tokenizer.convert_tokens_to_ids(["."] + list("ar") + ["|"]) == [0, 1, 18, 19]
    assert tokenizer.pad_token_id == 0 and tokenizer.eos_token_id == 0
    assert tokenizer("ab|r")["input_ids"] == [1, 2, 19, 18]
    assert REGBENCH_SYMBOLS == ["."] + list("abcdefghijklmnopqr") + ["|"]


@settings(max_examples=50, deadline=None)
@given(REGBENCH_TEXT)
def test_regbench_round_trip(text):
    tokenizer = regbench_tokenizer()
    ids = tokenizer(text)["input_ids"]
    assert ids == [REGBENCH_SYMBOLS.index(c) for c in text]
    assert tokenizer.decode(ids) == text


def test_left_padding_and_save_load(tmp_path):
    tokenizer = regbench_tokenizer()
    batch = tokenizer(["ab", "abcd"], padding=True, padding_side="left")
    assert batch["input_ids"] == [[0, 0, 1, 2], [1, 2, 3, 4]]
    assert batch["attention_mask"] == [[0, 0, 1, 1], [1, 1, 1, 1]]
    tokenizer.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    assert loaded("q|a")["input_ids"] == tokenizer("q|a")["input_ids"] and loaded.pad_token == "."


def test_char_tokenizer_appends_missing_specials():
    tokenizer = char_tokenizer(list("ab"), pad_token="*", eos_token=".", bos_token="$")
    assert tokenizer.convert_tokens_to_ids(["a", "b", "*", ".", "$"]) == [0, 1, 2, 3, 4]
