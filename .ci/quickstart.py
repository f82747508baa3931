"""The README's quickstart, as written, in a fresh virtual environment with the base install only (no extras).

1. Reads the README's first ```bash block (the quickstart) and runs its `pip install` commands verbatim inside a new
   venv, from the repository root. The pip cache is shared with the rest of CI.
2. Runs its training command from an empty working folder, shortened with `--max-steps 20` (the default run is
   otherwise unchanged, so it writes the default run folder).
3. Checks the run folder (`metrics.json`, `summary.md`, the plot, `model/`) and that the README's loading snippet
   names it.
4. Runs the README's Python loading snippet verbatim in that venv, in a process where hf_icl cannot be imported.

Any failure exits non-zero, so `.ci/run` stops before the test suite: an unguarded import of an optional package
(numba's kernels aside, numba is a base dependency; Triton, mamba-ssm, flash-linear-attention, scikit-learn...) fails
here, where the dev install would have hidden it.

Usage: `python .ci/quickstart.py [--keep DIR]` (from anywhere; `--keep` leaves the venv and run folder in DIR).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STEPS = "20"
HIDE_HF_ICL = "import sys; sys.modules['hf_icl'] = None  # as on a machine without hf_icl\n"


def readme_blocks(language: str) -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def quickstart_commands() -> list[list[str]]:
    """The README's first bash block, split at `&&` into argument lists."""
    block = readme_blocks("bash")[0].strip()
    return [shlex.split(part) for part in block.replace("\\\n", " ").split("&&")]


def loading_snippet() -> str:
    """The first Python block of the README that loads a run folder with `from_pretrained`."""
    return next(block for block in readme_blocks("python") if "from_pretrained(" in block)


def run(command: list[str], **kwargs) -> None:
    print("+", shlex.join(command), flush=True)
    started = time.time()
    subprocess.run(command, check=True, **kwargs)
    print(f"  ({time.time() - started:.0f} s)", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="a folder to keep the venv and the run in (default: a temporary one)")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="hf_icl_quickstart."))
    work.mkdir(parents=True, exist_ok=True)
    venv, rundir = work / "venv", work / "run"
    shutil.rmtree(rundir, ignore_errors=True)
    rundir.mkdir()
    try:
        run([sys.executable, "-m", "venv", str(venv)])
        python = str(venv / "bin" / "python")
        env = {**os.environ, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}", "VIRTUAL_ENV": str(venv)}
        env.pop("PYTHONPATH", None)
        commands = quickstart_commands()
        *installs, launch = commands
        for command in installs:
            if command[:2] != ["pip", "install"]:
                raise SystemExit(f"README quickstart: expected `pip install ...` before the run, got {command}")
            run([python, "-m", "pip", "install", "--quiet", *command[2:]], cwd=ROOT, env=env)
        if launch[:3] != ["accelerate", "launch", "train.py"]:
            raise SystemExit(f"README quickstart: expected `accelerate launch train.py ...` last, got {launch}")
        run([*launch[:2], str(ROOT / "train.py"), *launch[3:], "--max-steps", STEPS], cwd=rundir, env=env)

        snippet = loading_snippet()
        folder = re.search(r'from_pretrained\(\s*"([^"]+)"', snippet).group(1)
        default = subprocess.run(
            [python, "-c", "from hf_icl.training import parse_args; print(parse_args([]).resolved_output_dir())"],
            capture_output=True, text=True, check=True, env=env, cwd=rundir,
        ).stdout.strip()  # fmt: skip
        if Path(folder) != Path(default) / "model":
            raise SystemExit(f"README loading snippet opens {folder}, but the default run writes {default}/model")
        output = rundir / default
        for name in ("metrics.json", "summary.md", "training_curves.png", "model/config.json"):
            if not (output / name).is_file():
                raise SystemExit(f"the quickstart run folder {output} has no {name}")
        metrics = json.loads((output / "metrics.json").read_text())
        print(f"quickstart run: {metrics['train']['steps']} steps, test {metrics['test']['model']}", flush=True)

        (rundir / "snippet.py").write_text(HIDE_HF_ICL + snippet)
        env_snippet = {**env, "HF_HUB_OFFLINE": "1", "HF_MODULES_CACHE": str(work / "modules")}
        run([python, "snippet.py"], cwd=rundir, env=env_snippet, stdin=subprocess.DEVNULL)
        print("quickstart: ok", flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
