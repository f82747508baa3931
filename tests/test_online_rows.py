"""`--task-option online=true` on the copy and lookup tasks: fresh packed rows every step from the task's own
training-row sampler, tokenized as the fixed split is, with `--curriculum` growing `train_max_length`; and the
refusals before any work."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_icl.tasks import TaskRequest, family_of
from hf_icl.tasks.generation.copying import CopyingBuilder, train_row
from hf_icl.tasks.generation.generative import span_training_example
from hf_icl.tasks.generation.spec import ONLINE_TASKS
from hf_icl.tasks.online import OnlineBatches, StepCurriculum, step_rng
from hf_icl.training import main

SMALL = {"n_validation": 8, "n_per_length": 2, "train_max_length": 12, "context_len": 64, "test_max_length": 30}
TRAIN = ["--architecture", "transformer", "--preset", "tiny", "--batch-size", "4", "--threads", "1",
         "--report-to", "none", "--max-steps", "6", "--log-every", "1"]  # fmt: skip


def online_data(task="copy", small=SMALL, **options):
    """The task prepared for online training with the small split sizes (`small`) and `options`."""
    request = TaskRequest(task, options={**small, **options, "online": True})
    return family_of(task).prepare_data(request)


def refused_before_any_work(tmp_path, capsys, argv) -> str:
    """Runs train.py with `argv`; asserts a usage error (exit 2) that wrote nothing; returns its stderr."""
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, *TRAIN, "--output-dir", str(out)])
    assert exit_info.value.code == 2
    assert not out.exists()
    return capsys.readouterr().err


@pytest.fixture(scope="module")
def copy_data():
    return online_data()


def decode(data, ids):
    vocab = {i: c for c, i in data.tokenizer.get_vocab().items()}
    return "".join(vocab[int(i)] for i in ids)


def test_the_copy_and_lookup_tasks_and_no_other_draw_online():
    assert ONLINE_TASKS == ("copy", "copy_dup_ngram", "lookup_suffix", "lookup_prefix")
    assert TaskRequest("copy", options={"online": True}).samples_online()
    assert not TaskRequest("copy").samples_online()
    assert [o.name for o in family_of("phonebook").options_for("phonebook")] == []


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**16), step=st.integers(0, 10**6), length=st.integers(2, 12))
def test_a_step_draws_the_rows_of_the_task_sampler_tokenized_as_the_fixed_split(copy_data, seed, step, length):
    sampler = copy_data.train
    sampler.params["train_max_length"] = length
    batch = sampler.sample_batch(3, step_rng(seed, 0, step))
    again = sampler.sample_batch(3, step_rng(seed, 0, step))
    assert batch["input_ids"].shape == batch["labels"].shape == (3, SMALL["context_len"])  # (B, T)
    assert (batch["input_ids"] == again["input_ids"]).all() and (batch["labels"] == again["labels"]).all()
    config = dataclasses.replace(copy_data.config, train_max_length=length)
    rng = step_rng(seed, 0, step)
    for row, ids, labels in zip([train_row(config, rng) for _ in range(3)], batch["input_ids"], batch["labels"]):
        text, targets = span_training_example(row)
        assert decode(copy_data, ids) == text
        assert [None if t < 0 else decode(copy_data, [t]) for t in labels.tolist()] == targets
        assert max(row["lengths"]) <= length  # every complete example within this step's range
        for start, end in zip(row["answer_starts"], row["answer_ends"]):
            prompt = text[:start]
            assert text[start:end] == prompt[prompt.rindex("$") + 1 : -1]  # `$ s | s .`: the answer is s


def longest_answer(labels) -> int:
    """The longest run of labelled positions in a (T,) label row, less its EOS: the longest copied string."""
    longest = run = 0
    for labelled in (labels >= 0).tolist():
        run = run + 1 if labelled else 0
        longest = max(longest, run)
    return longest - 1


def test_a_curriculum_grows_the_string_lengths_step_by_step(copy_data):
    curriculum = StepCurriculum.parse("train_max_length=4:12:4:2")
    batches = OnlineBatches(copy_data.train, 16, seed=0, curricula=[curriculum])
    longest = [max(longest_answer(row) for row in batch["labels"]) for _, batch in zip(range(6), batches)]
    assert all(n <= curriculum.value_at(step) for step, n in enumerate(longest))
    assert longest[:2] == [4, 4] and max(longest[2:4]) > 4 and max(longest[4:]) > 8  # 16 contexts reach each range
    assert copy_data.train.params["train_max_length"] == 12


def test_a_curriculum_must_end_at_the_tasks_value_and_fit_the_context(copy_data):
    with pytest.raises(ValueError, match="ends at 10, but the task's train_max_length is 12"):
        copy_data.train.check_curricula([StepCurriculum.parse("train_max_length=4:10:2:5")])
    data = online_data(train_max_length=40, context_len=90)
    refused = r"context_len=8:90:41:5 reaches \{'context_len': 8\} at its start, which the sampler rejects"
    with pytest.raises(ValueError, match=refused):
        data.train.check_curricula([StepCurriculum("context_len", 8, 90, 41, 5)])


def test_online_copy_trains_with_a_curriculum_and_records_it(tmp_path):
    options = [x for key, value in {**SMALL, "online": "true"}.items() for x in ("--task-option", f"{key}={value}")]
    metrics = main(["--task", "copy", *TRAIN, *options, "--curriculum", "train_max_length=4:12:4:2",
                    "--output-dir", str(tmp_path)])  # fmt: skip
    assert [h["train_max_length"] for h in metrics["train"]["history"]] == [4, 4, 8, 8, 12, 12]
    assert metrics["test"]["model"]["string_accuracy_in_train_range"] is not None


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--task", "copy", "--curriculum", "train_max_length=4:12:4:5"],
         "task 'copy' trains on a fixed dataset unless --task-option online=true"),
        (["--task", "phonebook", "--task-option", "online=true"], "argument --task-option: 'online' is not one of"),
        (["--task", "copy", "--task-option", "online=maybe"], "online='maybe' is not allowed: expected a bool"),
        (["--task", "copy", "--task-option", "online=true", "--n-train", "100"],
         "argument --n-train: n_train=100 sizes the fixed training split of task 'copy'"),
        (["--task", "copy", "--task-option", "online=true", "--task-option", "train_max_length=12",
          "--curriculum", "train_max_length=4:20:4:5"], "ends at 20, but the task's train_max_length is 12"),
    ],
)  # fmt: skip
def test_bad_online_settings_fail_in_one_line_before_any_work(tmp_path, capsys, argv, message):
    assert message in refused_before_any_work(tmp_path, capsys, argv)


def test_the_fixed_training_split_is_the_same_row_sampler():
    config = CopyingBuilder(config_name="copy", **SMALL, n_train=3).config
    rows = list(CopyingBuilder.iter_rows(config, "train"))
    assert len(rows) == 3 and all(len(row["text"]) == SMALL["context_len"] for row in rows)
    row = train_row(config, np.random.default_rng(0))
    assert len(row["text"]) == SMALL["context_len"] and max(row["lengths"]) <= SMALL["train_max_length"]
