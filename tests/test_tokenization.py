"""Tokenizers: reference ids, round trips, padding, save/load next to a checkpoint, and `hf_icl.load_tokenizer` for
every token task of the registry."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import AutoTokenizer, PreTrainedTokenizerFast

import hf_icl
from hf_icl.tasks import TaskRequest, family_of
from hf_icl.tasks.char_tokenizer import char_tokenizer
from hf_icl.tasks.regbench import REGBENCH_SYMBOLS, regbench_tokenizer

TOKEN_TASKS = [task for task in hf_icl.list_tasks() if family_of(task).head == "causal_lm"]

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


@pytest.mark.parametrize("task", TOKEN_TASKS)
def test_every_token_task_has_a_tokenizer(task):
    tokenizer = hf_icl.load_tokenizer(task)
    assert isinstance(tokenizer, PreTrainedTokenizerFast)
    assert tokenizer.pad_token_id is not None and tokenizer.eos_token_id is not None
    assert len(tokenizer) > 2


def test_load_tokenizer_is_the_one_training_saves_and_reads_task_options():
    request = TaskRequest("regbench", n_train=8, options={"n_test": 2, "n_validation": 2})
    data = family_of("regbench").prepare_data(request)
    assert hf_icl.load_tokenizer("regbench").get_vocab() == data.tokenizer.get_vocab()
    assert len(hf_icl.load_tokenizer("mqar", vocab_size=100)) == 101  # zoology's ids 0..V-1, then the pad/eos
    with pytest.raises(ValueError, match="vocab_size=0 is not allowed"):
        hf_icl.load_tokenizer("mqar", vocab_size=0)
    with pytest.raises(ValueError, match="task='linear_regression' has continuous inputs and no tokenizer"):
        hf_icl.load_tokenizer("linear_regression")
    with pytest.raises(ValueError, match="task='chess' is not one of"):
        hf_icl.load_tokenizer("chess")
