"""Every code block of `docs/extending.md` runs: the page is the test's script.

The page marks each fenced block in its source with an HTML comment on the line before it: `<!-- file: PATH -->`
writes the block to PATH, `<!-- run -->` runs it (bash or Python) in a new process; both in one fresh folder, in page
order. The run blocks train 2 steps with each plug-in (a mixer, an architecture, a task family and a block feature,
the last through `train.py --import` and again as an installed entry point) and run the analysis plug-in.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "extending.md"
MARKER = r"(?:<!-- (?P<marker>run|file: (?P<path>\S+)) -->\n)?"  # the comment on the line before a fence
BLOCK = re.compile(MARKER + r"```(?P<lang>\w*)\n(?P<body>.*?)^```$", re.M | re.S)

IN_PACKAGE = {  # page file -> where the same file goes inside the package
    "running_mean.py": "mixers/running_mean.py",
    "local_global": "architectures/local_global",
    "reverse_family.py": "tasks/reverse/__init__.py",
    "residual_gate.py": "block_features/residual_gate.py",
    "reverse_errors.py": "analysis/reverse_errors.py",
}


def page_blocks() -> list[dict]:
    return [match.groupdict() for match in BLOCK.finditer(PAGE.read_text(encoding="utf-8"))]


def environment(folder: Path, pythonpath: Path = ROOT) -> dict:
    base = {key: value for key, value in os.environ.items() if key != "HF_ICL_PLUGINS"}
    return {**base, "PYTHONPATH": str(pythonpath), "OMP_NUM_THREADS": "1", "HF_MODULES_CACHE": str(folder / "modules")}


def write_files(folder: Path) -> None:
    for block in page_blocks():
        if block["path"]:
            (folder / block["path"]).parent.mkdir(parents=True, exist_ok=True)
            (folder / block["path"]).write_text(block["body"], encoding="utf-8")


def test_every_block_is_marked_parses_and_every_file_is_used():
    blocks = page_blocks()
    fences = PAGE.read_text(encoding="utf-8").count("\n```") // 2
    assert len(blocks) == fences, "a fenced block the pattern missed (nested or unterminated?)"
    unmarked = [block["body"][:60] for block in blocks if block["marker"] is None]
    assert not unmarked, f"blocks without <!-- run --> or <!-- file: PATH -->: {unmarked}"
    for i, block in enumerate(blocks):
        if block["lang"] == "python":
            compile(block["body"], block["path"] or f"run block {i}", "exec")
        elif block["lang"] == "bash":
            check = subprocess.run(["bash", "-n"], input=block["body"], capture_output=True, text=True)
            assert check.returncode == 0, (block["body"], check.stderr)
        else:
            assert block["path"] and block["lang"] == "toml", block
    runs = "\n".join(block["body"] for block in blocks if block["marker"] == "run")
    for block in blocks:  # every file is imported or installed by a run block, by its path or its package folder
        if block["path"]:
            path = Path(block["path"])
            used = path.parts[0] if len(path.parts) > 1 else path.stem
            assert used in runs, f"{block['path']} is written but no run block uses it"
    kinds = {"register_mixer", "register_architecture", "register_family", "register_block_feature",
             "register_analysis"}  # fmt: skip
    assert all(kind in PAGE.read_text(encoding="utf-8") for kind in kinds)


@pytest.mark.slow
def test_every_block_of_the_page_runs_in_a_fresh_process(tmp_path):
    """About 4 minutes on 2 loaded cores: five short trainings, the analysis, a pip install into a folder."""
    (tmp_path / "train.py").symlink_to(ROOT / "train.py")  # the page's commands run from a checkout
    done = 0
    for block in page_blocks():
        if block["path"]:
            (tmp_path / block["path"]).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / block["path"]).write_text(block["body"], encoding="utf-8")
            continue
        command = ["bash", "-euo", "pipefail", "-c"] if block["lang"] == "bash" else [sys.executable, "-c"]
        result = subprocess.run([*command, block["body"]], cwd=tmp_path, env=environment(tmp_path), text=True,
                                capture_output=True, timeout=600, stdin=subprocess.DEVNULL)  # fmt: skip
        assert result.returncode == 0, (block["body"], result.stdout[-2000:], result.stderr[-4000:])
        done += 1
    assert done == sum(block["marker"] == "run" for block in page_blocks())
    trained = [tmp_path / "runs" / name / "metrics.json" for name in ("running_mean", "local_global", "reverse",
                                                                      "installed")]  # fmt: skip
    trained.append(tmp_path / "outputs" / "mqar-n32-transformer+gate0.1-tiny-s0" / "metrics.json")
    for metrics in trained:
        assert '"steps": 2' in metrics.read_text(), metrics


@pytest.mark.slow
def test_the_same_files_work_inside_the_package(tmp_path):
    """Each plug-in file of the page, dropped into a copy of the package, registers itself with `import hf_icl`."""
    pages = tmp_path / "page"
    pages.mkdir()
    write_files(pages)
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "hf_icl", copy / "hf_icl", ignore=shutil.ignore_patterns("__pycache__"))
    for source, target in IN_PACKAGE.items():
        destination = copy / "hf_icl" / target
        destination.parent.mkdir(parents=True, exist_ok=True)
        if (pages / source).is_dir():
            shutil.copytree(pages / source, destination)
        else:
            shutil.copy(pages / source, destination)
    code = (
        "import hf_icl\n"
        "from hf_icl.analysis.__main__ import ANALYSES, discover\n"
        "from hf_icl.block_features import list_block_features\n"
        "from hf_icl.mixers.registry import list_mixers\n"
        "discover()\n"
        f"assert hf_icl.__file__.startswith({str(copy)!r}), hf_icl.__file__\n"
        "assert 'running_mean' in list_mixers() and 'local_global' in hf_icl.list_architectures()\n"
        "assert 'reverse' in hf_icl.list_tasks() and 'residual_gate' in list_block_features()\n"
        "assert ANALYSES['reverse_errors'].TASK_FAMILY == 'reverse'\n"
        "hf_icl.config_for('local_global', 'tiny', mixer_types=['running_mean', 'attention'], residual_gate=0.5)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=environment(tmp_path, copy), text=True,
                            capture_output=True, timeout=600, stdin=subprocess.DEVNULL)  # fmt: skip
    assert result.returncode == 0, result.stderr[-4000:]
