"""Every option discoverable (issue 55, item 1): `train.py --task T --help` lists T's options with type, default and
meaning plus its family's presets, `--architecture A --help` lists A's config fields, and `docs/tasks.md` is the
registry's rendering (nobody keeps a copy by hand)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import hf_icl
from hf_icl import cli
from hf_icl.pages.tasks_page import main as tasks_page_main
from hf_icl.tasks import family_of, list_tasks, task_option_fields
from hf_icl.training import main as train_main
from hf_icl.utils.option_help import architecture_fields, docstring_args, task_options

PAGE = Path(__file__).resolve().parents[1] / "docs" / "tasks.md"


def _help(capsys, run, argv) -> str:
    with pytest.raises(SystemExit) as exit_info:
        run(argv)
    assert exit_info.value.code == 0
    return capsys.readouterr().out


def test_task_help_lists_the_options_with_type_default_and_meaning(capsys):
    text = _help(capsys, train_main, ["--task", "mqar", "--help"])
    assert "num_kv_pairs (int, default 8; --task-option): MQAR: key-value pairs, each queried once." in text
    assert "vocab_size (int, default 8192; --task-option)" in text
    assert "input_seq_len (int, default 64; --task-option)" in text
    assert "n_train (int, default 20000; --n-train)" in text


def test_task_help_lists_the_family_presets_and_run_defaults(capsys):
    text = _help(capsys, cli.main, ["train", "--task", "regbench", "--help"])
    assert "task presets (--task-preset NAME):" in text and "  paper: {" in text and "  quickstart: {" in text
    assert 'family run defaults: {"n_train": 2500' in text
    assert "train_on_delimiter (bool, default true; --task-option)" in text  # the family's own option
    assert "n_train (int, default 2500; --n-train)" in text  # the family default, not the builder's


def test_architecture_help_lists_its_config_fields_and_presets(capsys):
    text = _help(capsys, train_main, ["--architecture", "mamba", "--help"])
    assert "ssm_state_size (int, default 16; --override): state size N" in text  # a field of its mixer
    assert 'position_embedding (str, default "nope"; --override)' in text  # shared, with the class's value
    assert "size presets (--preset NAME):" in text and "  mamba_hybrid_middle: {" in text
    assert "gate_low_rank" not in text  # GLA's field: not a field of this architecture


def test_plain_help_has_no_topic(capsys):
    text = _help(capsys, train_main, ["--help"])
    assert "task presets (--task-preset NAME)" not in text and "`--task T --help`" in text


@pytest.mark.parametrize("task", list_tasks())
def test_every_task_option_is_documented_with_a_type(task):
    options = task_options(task)
    assert [option.name for option in options] == list(task_option_fields(task))
    for option in options:
        assert option.type != "?", (task, option.name)
        assert option.doc, (task, option.name)


@pytest.mark.parametrize("architecture", hf_icl.list_architectures())
def test_every_architecture_field_is_documented(architecture):
    fields = architecture_fields(architecture)
    assert {"hidden_size", "num_hidden_layers", "position_embedding"} <= {field.name for field in fields}
    for field in fields:
        assert field.doc, (architecture, field.name)


def test_docstring_args_reads_shared_lines_and_continuations():
    class Config:
        """Something.

        Args:
            a, b (`int`): first line
                continued.
            **others: not a field
                nor this.
            c: third.

        Returns:
            nothing: not an argument.
        """

    assert docstring_args(Config) == {"a": "first line continued.", "b": "first line continued.", "c": "third."}


def test_family_run_defaults_win_over_the_generator_default():
    options = {option.name: option for option in task_options("linear_regression")}
    assert options["n_dims"].default == family_of("linear_regression").run_defaults["task_options"]["n_dims"]


def test_the_committed_page_equals_its_regeneration():
    """In a fresh process: other tests register throwaway tasks in this one."""
    result = subprocess.run([sys.executable, "-m", "hf_icl.pages.tasks_page", "--check", str(PAGE)],
                            capture_output=True, text=True, timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr + "\nrun: python -m hf_icl.pages.tasks_page --write docs/tasks.md"
    text = PAGE.read_text(encoding="utf-8")
    assert "| `num_kv_pairs` | `int` | `8` | `--task-option` |" in text
    assert "python train.py --task mqar --architecture transformer" in text


def test_a_stale_page_fails_the_check(tmp_path):
    page = tmp_path / "tasks.md"
    page.write_text("old\n")
    assert tasks_page_main(["--check", str(page)]) == 1
    assert tasks_page_main(["--write", str(page)]) == 0 and tasks_page_main(["--check", str(page)]) == 0
