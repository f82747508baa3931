"""The `hf-icl` console command (`[project.scripts]`), run as a subprocess: each subcommand is its module's own
parser and checks (help, one-line errors with status 2, real work), under the program name `hf-icl <command>`.

The script is resolved the way an installer does: from the entry points setuptools writes for this checkout's
`pyproject.toml` (`importlib.metadata`), then run as pip's wrapper runs it (`sys.exit(main())`); where `hf-icl` is
installed from this checkout (CI: `pip install -e ".[dev]"`), the script on PATH is run as well.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
import tomllib

import hf_icl.cli

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}


@pytest.fixture(scope="module")
def entry_point(tmp_path_factory) -> metadata.EntryPoint:
    """`hf-icl` from the metadata setuptools builds from pyproject.toml (what `pip install` records)."""
    base = tmp_path_factory.mktemp("egg-info")
    subprocess.run(
        [sys.executable, "-c", "from setuptools import setup; setup()", "-q", "egg_info", "--egg-base", str(base)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        env=ENV,
    )
    (info,) = base.glob("*.egg-info")
    (found,) = metadata.Distribution.at(info).entry_points.select(group="console_scripts", name="hf-icl")
    return found


def hf_icl_command(entry: metadata.EntryPoint, *args: str, cwd=None) -> subprocess.CompletedProcess:
    """`hf-icl ARGS` as pip's console-script wrapper runs it."""
    module, _, function = entry.value.partition(":")
    wrapper = f"import sys; from {module} import {function}; sys.argv[0] = 'hf-icl'; sys.exit({function}())"
    return subprocess.run(
        [sys.executable, "-c", wrapper, *args], capture_output=True, text=True, env=ENV, cwd=cwd, timeout=600
    )


def test_the_script_resolves_to_the_dispatcher(entry_point):
    with open(ROOT / "pyproject.toml", "rb") as handle:
        assert tomllib.load(handle)["project"]["scripts"] == {"hf-icl": "hf_icl.cli:main"}
    assert entry_point.load() is hf_icl.cli.main
    assert set(hf_icl.cli.COMMANDS) == {"train", "evaluate", "analysis", "report", "sweep", "export", "lm-eval-tasks"}


def test_the_installed_script_runs_where_this_checkout_is_installed():
    """Only where the installed `hf-icl` distribution is this checkout (an editable install of it); elsewhere the
    wrapper tests below are the script's run."""
    script = shutil.which("hf-icl")
    installed = [e for e in metadata.entry_points(group="console_scripts", name="hf-icl")]
    origin = metadata.distribution("hf-icl").read_text("direct_url.json") or ""
    if script is None or not installed or ROOT.as_uri() not in origin:
        pytest.skip("hf-icl is not installed from this checkout (CI installs it: pip install -e '.[dev]')")
    result = subprocess.run([script, "--help"], capture_output=True, text=True, env=ENV, timeout=120)
    assert result.returncode == 0 and "lm-eval-tasks" in result.stdout


@pytest.mark.parametrize("command", sorted(hf_icl.cli.COMMANDS))
def test_every_subcommand_prints_its_own_help(command, capsys):
    """In-process (one import of hf_icl for all seven); the subprocess tests below run the same dispatcher."""
    with pytest.raises(SystemExit) as exit_:
        hf_icl.cli.main([command, "--help"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: hf-icl {command}")


def test_an_unknown_or_missing_command_is_refused(capsys):
    with pytest.raises(SystemExit) as exit_:
        hf_icl.cli.main(["plot"])
    assert (
        exit_.value.code == 2
        and "hf-icl: error: argument COMMAND: 'plot' is not one of: train," in capsys.readouterr().err
    )
    assert hf_icl.cli.main([]) == 2 and "usage: hf-icl COMMAND" in capsys.readouterr().err
    assert hf_icl.cli.main(["--help"]) == 0 and "lm-eval-tasks" in capsys.readouterr().out


def test_bad_input_exits_2_with_one_line_naming_the_command(entry_point, tmp_path):
    result = hf_icl_command(entry_point, "train", "--lr", "-1", "--output-dir", str(tmp_path / "run"))
    assert result.returncode == 2 and not (tmp_path / "run").exists()
    assert result.stderr.startswith("hf-icl train: error:") and "--lr" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    result = hf_icl_command(entry_point, "evaluate", "--checkpoint", str(tmp_path / "missing"), "--task", "regbench")
    assert result.returncode == 2 and result.stderr.startswith("hf-icl evaluate: error:"), result.stderr


def test_export_then_lm_eval_tasks(entry_point, tmp_path):
    result = hf_icl_command(entry_point, "export", "regbench", "--output", str(tmp_path / "regbench"), "--configs",
                            "n150", "--n-train", "2", "--n-test", "2", "--n-validation", "2",
                            "--cache-dir", str(tmp_path / "cache"))  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert (tmp_path / "regbench" / "n150" / "test-00000-of-00001.parquet").is_file()
    result = hf_icl_command(entry_point, "lm-eval-tasks", "--data", str(tmp_path / "regbench"), "--output",
                            str(tmp_path / "tasks"))  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert (tmp_path / "tasks" / "hf_icl_regbench.yaml").is_file() and "lm_eval --model hf" in result.stdout
