"""`--task-option online=true` on the regular-language suite (P2): fresh strings every step from the builder's own
training sampler, labelled as the fixed split is, tokenized by its encoder, with `--curriculum` growing
`train_max_length`; and the refusals before any work."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_online_rows import TRAIN, online_data, refused_before_any_work
from test_regular_languages import MEMBERSHIP, TRANSDUCTION, both_class_lengths, oracle_answer, small_config

from hf_icl.tasks import TaskRequest
from hf_icl.tasks.formal_language import formal_language_tokenizer
from hf_icl.tasks.formal_language.regular_languages import LANGUAGES, causal_lm_example, generate_split, train_rows
from hf_icl.tasks.online import OnlineBatches, StepCurriculum, step_rng
from hf_icl.training import main

SMALL = {"n_validation": 16, "n_per_length": 4, "train_max_length": 12, "test_min_length": 13, "test_max_length": 20}


@pytest.fixture(scope="module")
def parity_data():
    return online_data("parity_check", SMALL)


def test_every_language_can_draw_online():
    for language in LANGUAGES:
        assert TaskRequest(language, options={"online": True}).samples_online()
        assert not TaskRequest(language).samples_online()


@settings(max_examples=25, deadline=None)
@given(language=st.sampled_from(LANGUAGES), seed=st.integers(0, 2**16), high=st.integers(4, 10), n=st.integers(1, 40))
def test_online_strings_are_labelled_and_ranged_as_the_fixed_split(language, seed, high, n):
    config = small_config(language, train_max_length=high)
    rows = train_rows(config, np.random.default_rng(seed), n)
    again = train_rows(config, np.random.default_rng(seed), n)
    assert rows == again and len(rows["input"]) == len(rows["answer"]) == len(rows["length"]) == n
    alphabet = set(TRANSDUCTION[language][1] if language in TRANSDUCTION else "01")
    for text, answer, length in zip(rows["input"], rows["answer"], rows["length"]):
        assert len(text) == length and 1 <= length <= high and set(text) <= alphabet
        assert answer == oracle_answer(language, text)
    fixed = set(generate_split(config, "train")["length"]) | set(generate_split(config, "validation")["length"])
    allowed = both_class_lengths(language, 1, high) if language in MEMBERSHIP else sorted(fixed)
    assert set(rows["length"]) <= set(allowed)  # recognition: only lengths that hold both classes


def test_recognition_classes_are_a_fair_coin_and_lengths_uniform():
    config = small_config("dyck_2", train_max_length=8)  # lengths with both classes: 2, 4, 6, 8
    rows = train_rows(config, np.random.default_rng(0), 4000)
    assert abs(rows["answer"].count("1") / 4000 - 0.5) < 0.03
    counts = np.bincount(rows["length"], minlength=9)[[2, 4, 6, 8]]
    assert counts.sum() == 4000 and (abs(counts / 4000 - 0.25) < 0.03).all()


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**16), step=st.integers(0, 10**6), high=st.integers(2, 12))
def test_a_step_draws_the_builder_strings_tokenized_as_the_fixed_split(parity_data, seed, step, high):
    sampler = parity_data.train
    sampler.params["train_max_length"] = high
    batch = sampler.sample_batch(5, step_rng(seed, 0, step))
    again = sampler.sample_batch(5, step_rng(seed, 0, step))
    assert (batch["input_ids"] == again["input_ids"]).all() and (batch["labels"] == again["labels"]).all()
    rows = train_rows(small_config("parity_check", train_max_length=high), step_rng(seed, 0, step), 5)
    tokenizer = formal_language_tokenizer()
    for text, answer, ids, labels in zip(rows["input"], rows["answer"], batch["input_ids"], batch["labels"]):
        full, query = causal_lm_example({"input": text, "answer": answer})
        expected = tokenizer(full)["input_ids"]
        assert ids[: len(expected)].tolist() == expected and (ids[len(expected) :] == tokenizer.pad_token_id).all()
        assert labels.tolist() == [-100] * (query + 1) + [expected[-1]] + [-100] * (len(ids) - len(expected))


def test_a_curriculum_grows_the_string_lengths_step_by_step(parity_data):
    curriculum = StepCurriculum.parse("train_max_length=4:12:4:2")
    batches = OnlineBatches(parity_data.train, 64, seed=0, curricula=[curriculum])
    longest = [int((batch["labels"] >= 0).nonzero()[:, 1].max()) - 1 for _, batch in zip(range(6), batches)]
    assert longest == [4, 4, 8, 8, 12, 12]  # 64 strings reach the top length of each stage: the `?` sits after it
    assert parity_data.train.params["train_max_length"] == 12


def test_online_parity_trains_with_a_curriculum_and_evaluates_the_configs_range(tmp_path):
    options = [x for key, value in {**SMALL, "online": "true"}.items() for x in ("--task-option", f"{key}={value}")]
    metrics = main(["--task", "parity_check", *TRAIN, *options, "--curriculum", "train_max_length=4:12:4:2",
                    "--output-dir", str(tmp_path)])  # fmt: skip
    assert [h["train_max_length"] for h in metrics["train"]["history"]] == [4, 4, 8, 8, 12, 12]
    assert metrics["test"]["train_max_length"] == 12  # the config's range, not the one row the fixed split keeps
    assert metrics["test"]["model"]["accuracy_in_train_range"] is not None


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--task", "parity_check", "--curriculum", "train_max_length=4:12:4:5"],
         "task 'parity_check' trains on a fixed dataset unless --task-option online=true"),
        (["--task", "parity_check", "--task-option", "online=true", "--n-train", "100"],
         "argument --n-train: n_train=100 sizes the fixed training split of task 'parity_check'"),
        (["--task", "parity_check", "--task-option", "online=true", "--task-option", "train_max_length=12",
          "--curriculum", "train_max_length=4:20:4:5"], "ends at 20, but the task's train_max_length is 12"),
        (["--task", "dyck_2", "--task-option", "online=true", "--task-option", "train_max_length=12",
          "--curriculum", "train_max_length=1:12:1:5"], "reaches {'train_max_length': 1} at its start"),
    ],
)  # fmt: skip
def test_bad_online_settings_fail_in_one_line_before_any_work(tmp_path, capsys, argv, message):
    assert message in refused_before_any_work(tmp_path, capsys, argv)
