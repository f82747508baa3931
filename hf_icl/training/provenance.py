"""Which code trained a run, and on what: `metrics.json["code"]` holds hf_icl's and torch's versions and, when the
package is imported from a git checkout, its commit and whether its sources had uncommitted changes;
`metrics.json["machine"]` the CPU model, its logical CPUs and the vector extensions the compiled kernels use (AVX-512,
AMX), so that a run's CPU time is read against its host (a CPU run's cost differs by about 2x between the project's
AMD EPYC and Intel Xeon hosts).

Two runs of one config and seed trained by different code need not agree: a kernel exact to 1e-5 still moves the
optimisation path, and at CPU scale the trained outcome can move by more than the spread between seeds (the
y-model's seed 0 scored 0.660 and, on later code, 0.742). A run's seed names a reproducible model only together
with its commit.

The code is read when the training process starts (`start_run`), not when it writes `metrics.json`: the checkout
may move on while a run trains, and the process keeps the code it imported. A resumed run may span several
versions: the trainer state carries `code_segments`, one entry per process that trained it, each with the step it
started from; `metrics.json` keeps them all when there was more than one.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import torch

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # hf_icl/


def git_output(*args: str) -> str | None:
    """`git -C <the package's folder> ARGS`'s stdout, or None (no git, not a checkout, a timeout)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(PACKAGE_DIR), *args], capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


def code_provenance() -> dict:
    """`{"hf_icl": version, "torch": version, "git_commit": sha or None, "git_dirty": bool or None}`; the dirty flag
    covers the package's own sources (`hf_icl/`), not results or notes elsewhere in the checkout."""
    from .. import __version__

    commit = git_output("rev-parse", "HEAD")
    status = git_output("status", "--porcelain", "--", ".") if commit else None
    return {
        "hf_icl": __version__,
        "torch": torch.__version__,
        "git_commit": commit or None,
        "git_dirty": bool(status) if status is not None else None,
    }


def machine_facts(cpuinfo: Path = Path("/proc/cpuinfo")) -> dict:
    """`{"cpu_model": str or None, "cpu_family": int or None, "cpu_count": int, "avx512": bool, "amx": bool}` of this
    host, from Linux's `cpuinfo` file (None and False where it cannot be read). The family tells apart hosts that
    share a model name: an "AMD EPYC" of family 25 (Zen 3/4) or 26 (Zen 5) runs the same step at different costs."""
    model, family, flags = None, None, set()
    try:
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and model is None:
                model = value.strip()
            elif key.strip() == "cpu family" and family is None and value.strip().isdigit():
                family = int(value)
            elif key.strip() == "flags" and not flags:
                flags = set(value.split())
    except OSError:
        pass
    return {"cpu_model": model, "cpu_family": family, "cpu_count": os.cpu_count(), "avx512": "avx512f" in flags,
            "amx": "amx_tile" in flags}  # fmt: skip


NOT_RECORDED = {"hf_icl": None, "torch": None, "git_commit": None, "git_dirty": None}
"""The code of steps trained before code segments were recorded (a checkpoint from older code)."""


def code_segments(saved: list | None, step: int, code: dict) -> list[dict]:
    """The trainer state's `code_segments` once a process with `code` starts training at `step`: the saved segments
    (a checkpoint's), or one of unknown code for the steps before `step` when a checkpoint has none, then this one."""
    segments = list(saved or [])
    if not segments and step > 0:
        segments.append({"from_step": 0, **NOT_RECORDED})
    return [*segments, {"from_step": step, **code}]
