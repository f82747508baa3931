"""A Python API that mirrors the CLI (issue 55, item 6): `hf_icl.train(**options) -> Run`, `hf_icl.evaluate(...)`,
`hf_icl.sweep(spec)`, each turned into the command line its command parses, so a bad option raises `ValueError` with
the command's own one line."""

from __future__ import annotations

import argparse
import importlib

import pytest
from cli_entry_points import call

import hf_icl
from hf_icl.api import Run, command_line
from hf_icl.training import main as train_main
from hf_icl.training.arguments import build_parser

MQAR = {"n_test": 16, "n_validation": 8, "vocab_size": 128, "input_seq_len": 32, "num_kv_pairs": 4}


@pytest.fixture(scope="module")
def mamba_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("api") / "mamba"
    run = hf_icl.train(task="mqar", architecture="mamba", preset="tiny", max_steps=5, output_dir=str(folder),
                       n_train=64, task_options=MQAR, report_to="none", threads=1)  # fmt: skip
    return run, folder


def test_train_returns_a_run_with_metrics_and_its_model(mamba_run):
    run, folder = mamba_run
    assert isinstance(run, Run) and run.output_dir == folder
    assert run.metrics["train"]["steps"] == 5 and "string_accuracy" in run.metrics["test"]["model"]
    assert run.metrics["run_config"]["task_options"] == MQAR
    model = run.model()
    assert type(model).__name__ == "ICLMambaForCausalLM" and model.config.vocab_size == run.tokenizer().vocab_size
    assert Run.from_dir(folder).metrics == run.metrics


def test_evaluate_scores_the_checkpoint(mamba_run, tmp_path):
    run, _ = mamba_run
    metrics = hf_icl.evaluate(run.checkpoint, "mqar", max_rows=4, output_dir=str(tmp_path / "eval"))
    assert metrics["task"] == "mqar" and "string_accuracy" in metrics["test"]["model"]
    with pytest.raises(ValueError, match="argument --max-rows"):
        hf_icl.evaluate(run.checkpoint, "mqar", max_rows=0)


def test_a_bad_option_is_the_command_line_error(tmp_path):
    argv = ["--task", "mqar", "--architecture", "mamba", "--max-steps", "0", "--output-dir", str(tmp_path / "r")]
    outcome = call(train_main, argv)
    cli_line = next(line for line in outcome.err.splitlines() if "error:" in line).split(": error: ", 1)[1]
    with pytest.raises(ValueError) as caught:
        hf_icl.train(task="mqar", architecture="mamba", max_steps=0, output_dir=str(tmp_path / "r"))
    assert str(caught.value) == cli_line and "max_steps=0" in cli_line
    with pytest.raises(ValueError, match="option 'max_step' is not one of: .*max_steps"):
        hf_icl.train(max_step=5)
    assert not (tmp_path / "r").exists()


def test_options_become_the_command_line():
    argv, rest = command_line(
        build_parser(),
        {"max_steps": 5, "overrides": {"hidden_size": 32, "position_embedding": "rope"}, "augment": False,
         "resume": True, "overwrite": False, "curriculum": ["n_dims=5:20:1:2000"], "imports": ["my_plugin"],
         "keep_checkpoints": 3, "warmup_steps": None},
        {"overrides": "override"},
    )  # fmt: skip
    assert argv == [
        "--max-steps", "5", "--override", "hidden_size=32", "--override", 'position_embedding="rope"', "--no-augment",
        "--resume", "--curriculum", "n_dims=5:20:1:2000", "--import", "my_plugin",
    ]  # fmt: skip
    assert rest == {"keep_checkpoints": 3, "warmup_steps": None}  # no flag, or None: passed in a --config file
    assert isinstance(build_parser().parse_args(argv), argparse.Namespace)


def test_options_without_a_flag_reach_the_run(tmp_path):
    run = hf_icl.train(architecture="transformer", preset="tiny", max_steps=2, keep_checkpoints=1, threads=1,
                       report_to="none", output_dir=str(tmp_path / "run"), n_train=100, task_seed=0,
                       task_options={"n_test": 4, "n_validation": 4}, checkpoint_every=1)  # fmt: skip
    assert run.metrics["run_config"]["keep_checkpoints"] == 1
    assert [p.name for p in (tmp_path / "run" / "checkpoints").iterdir() if p.is_dir()] == ["step_2"]


def test_the_names_are_the_command_modules_too():
    for name in ("train", "evaluate", "sweep"):
        module = importlib.import_module(f"hf_icl.{name}")
        assert getattr(hf_icl, name) is module and callable(module) and hasattr(module, "main")


@pytest.mark.slow
def test_sweep_from_a_mapping(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = {
        "output_root": "sweep",
        "base": {"architecture": "transformer", "preset": "tiny", "max_steps": 2, "threads": 1, "report_to": "none",
                 "n_train": 100, "task_options": {"n_test": 4, "n_validation": 4}},
        "grid": {"seed": [0, 1]},
    }  # fmt: skip
    results = hf_icl.sweep(spec)
    assert [r["name"] for r in results] == ["seed=0", "seed=1"] and all(r["returncode"] == 0 for r in results)
    assert Run.from_dir(results[1]["output_dir"]).metrics["run_config"]["seed"] == 1
    assert [r["status"] for r in hf_icl.sweep(spec)] == ["finished before"] * 2
    with pytest.raises(ValueError, match="grid.seed"):
        hf_icl.sweep({**spec, "grid": {"seed": []}})


@pytest.mark.slow
def test_the_issue_call_with_mqar_defaults(tmp_path):
    run = hf_icl.train(task="mqar", architecture="mamba", preset="tiny", max_steps=5, output_dir=str(tmp_path / "m"))
    assert run.metrics["train"]["steps"] == 5 and "string_accuracy" in run.metrics["test"]["model"]


def test_the_guide_sweep_spec_example_is_valid(tmp_path):
    """docs/guide.md's complete spec example expands to checked points (every key of a spec is in it)."""
    import re
    from pathlib import Path

    from hf_icl.sweep import SPEC_KEYS, check_points, expand, load_spec

    guide = (Path(__file__).resolve().parents[1] / "docs" / "guide.md").read_text(encoding="utf-8")
    example = re.search(r"```yaml\n(output_root: .*?)```", guide, re.S).group(1)
    (tmp_path / "spec.yaml").write_text(example)
    spec = load_spec(tmp_path / "spec.yaml")
    assert all(f"\n{key}:" in "\n" + example for key in SPEC_KEYS if key != "search")  # search excludes grid
    points = expand(spec)
    check_points(points)
    assert [p.name for p in points][-1] == "variant=mamba,seed=1"
    assert "position_embedding" not in points[-1].settings["overrides"]  # the variant's null dropped it


def test_the_guide_search_spec_example_is_valid(monkeypatch):
    """docs/guide.md's search example parses: its search section and every key of its space."""
    import re
    from pathlib import Path

    from hf_icl.sweep import load_spec

    root = Path(__file__).resolve().parents[1]
    guide = (root / "docs" / "guide.md").read_text(encoding="utf-8")
    example = next(m for m in re.findall(r"```yaml\n(output_root: .*?)```", guide, re.S) if "\nsearch:" in m)
    monkeypatch.chdir(root)  # its config path is relative to the repository
    spec_file = root / "outputs" / ".guide-search-spec.yaml"
    spec_file.parent.mkdir(exist_ok=True)
    spec_file.write_text(example)
    try:
        spec = load_spec(spec_file)
    finally:
        spec_file.unlink()
    assert spec.search["trials"] == 12 and "variant" in spec.search["space"]
