"""A family's own run options (`TaskFamily.training_options`): RegBench's `train_on_delimiter` is set with
`--task-option train_on_delimiter=false` (config files: `task_options:`), the old `--train-on-delimiter` flag and
top-level config key still work for one release with a `FutureWarning`, and `--resume` compares the resolved value
whichever way a run recorded it."""

from __future__ import annotations

import warnings

import pytest
import yaml

from hf_icl.tasks import TaskRequest, check_task_request, family_of, run_task_options
from hf_icl.training.arguments import build_parser, parse_args
from hf_icl.training.checkpoints import resume_differences

BASE = ["--architecture", "transformer", "--preset", "tiny", "--report-to", "none", "--max-steps", "2"]


def parsed(argv: list[str], deprecated: bool = False):
    """`parse_args(argv)`, asserting that it warns about a deprecated argument exactly when `deprecated`."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        args = parse_args([*BASE, *argv])
    found = [w for w in caught if issubclass(w.category, FutureWarning) and "train_on_delimiter" in str(w.message)]
    assert bool(found) == deprecated, [str(w.message) for w in caught]
    return args


def test_the_task_option_reaches_the_request_and_masks_the_delimiter_labels():
    args = parsed(["--task", "regbench", "--task-option", "train_on_delimiter=false"])
    assert args.task_options == {"train_on_delimiter": False} and not hasattr(args, "train_on_delimiter")
    request = TaskRequest("regbench", 8, 0, {**args.task_options, "n_test": 2, "n_validation": 2})
    assert request.option("train_on_delimiter") is False
    assert "train_on_delimiter" not in request.builder_overrides()  # never reaches the builder
    data = family_of("regbench").prepare_data(request)
    delimiter = data.tokenizer.convert_tokens_to_ids("|")
    example = data.train[0]
    assert delimiter in example["input_ids"]
    assert [label for token, label in zip(example["input_ids"], example["labels"]) if token == delimiter] == [
        -100
    ] * example["input_ids"].count(delimiter)
    assert data.description["train_on_delimiter"] is False  # what metrics.json's run_config records
    default = TaskRequest("regbench", 8, 0, {"n_test": 2, "n_validation": 2})
    assert default.option("train_on_delimiter") is True and default.training_option_values() == {
        "train_on_delimiter": True
    }


def test_bad_values_and_unknown_options_name_the_flag():
    with pytest.raises(ValueError, match=r"argument --task-option: train_on_delimiter='maybe' .*expected a bool"):
        parsed(["--task", "regbench", "--task-option", "train_on_delimiter=maybe"])
    with pytest.raises(ValueError, match=r"argument --task-option: 'train_on_delimiter' is not one of: .*n_per_length"):
        parsed(["--task", "copy", "--task-option", "train_on_delimiter=false"])
    with pytest.raises(ValueError, match="task 'copy' has no option 'train_on_delimiter'; its options: online"):
        TaskRequest("copy").option("train_on_delimiter")
    check_task_request(TaskRequest("regbench", 8, options={"train_on_delimiter": True, "n_test": 2}))


def test_the_old_flag_and_config_key_still_set_it_with_a_warning(tmp_path):
    assert parsed(["--task", "regbench", "--no-train-on-delimiter"], deprecated=True).task_options == {
        "train_on_delimiter": False
    }
    config = tmp_path / "old.yaml"
    config.write_text(yaml.safe_dump({"task": "regbench", "train_on_delimiter": False}))
    assert parsed(["--config", str(config)], deprecated=True).task_options == {"train_on_delimiter": False}
    explicit = ["--config", str(config), "--task-option", "train_on_delimiter=true"]
    assert parsed(explicit, deprecated=True).task_options == {"train_on_delimiter": True}  # the new spelling wins
    # a task without the option ignored the old argument, as before
    assert parsed(["--task", "copy", "--train-on-delimiter"], deprecated=True).task_options == {}


def test_the_paper_preset_masks_the_delimiter_and_the_command_line_overrides_it():
    assert parsed(["--task", "regbench", "--task-preset", "paper"]).task_options == {"train_on_delimiter": False}
    args = parsed(["--task", "regbench", "--task-preset", "paper", "--train-on-delimiter"], deprecated=True)
    assert args.task_options == {"train_on_delimiter": True}


def test_help_lists_the_declared_task_options():
    help_text = " ".join(build_parser().format_help().split())
    assert "train_on_delimiter (bool, default true; regbench): train on the `|` labels too" in help_text


def test_resume_compares_the_resolved_option_however_a_run_recorded_it():
    old = {"task": "regbench", "task_options": {}, "train_on_delimiter": True}  # saved before the task option
    assert resume_differences(old, {"task": "regbench", "task_options": {}}) == []
    assert resume_differences(old, {"task": "regbench", "task_options": {"train_on_delimiter": True}}) == []
    changed = resume_differences(old, {"task": "regbench", "task_options": {"train_on_delimiter": False}})
    assert changed == ["task_options: saved {'train_on_delimiter': True}, now {'train_on_delimiter': False}"]
    masked = {"task": "regbench", "task_options": {}, "train_on_delimiter": False}
    assert resume_differences(masked, {"task": "regbench", "task_options": {}}) != []
    assert run_task_options("regbench", {"n_test": 5}, masked) == {"n_test": 5, "train_on_delimiter": False}
    assert run_task_options("copy", {"n_test": 5}) == {"n_test": 5, "online": False}
    assert run_task_options("phonebook", {"n_test": 5}) == {"n_test": 5}  # a task without family options
