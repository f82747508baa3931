"""How `train.py` was launched: a warning when `accelerate launch --num_processes N` (N > 1) started one process.

Without `--multi_gpu` (or a config file that sets a distributed type), `accelerate launch` uses its simple launcher:
it starts a single process, but sets `MASTER_ADDR`/`MASTER_PORT` when more than one was asked for. torchrun, which
starts the real process group, sets `WORLD_SIZE`; the simple launcher does not.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

CPU_DDP_COMMAND = "ACCELERATE_USE_CPU=true accelerate launch --multi_gpu --num_processes {n} train.py ..."


def launcher_arguments(pid: int | None = None) -> list[str]:
    """The command line of the parent process (the launcher), or `[]` where it cannot be read."""
    try:
        with open(f"/proc/{pid or os.getppid()}/cmdline", "rb") as handle:
            return [part.decode(errors="replace") for part in handle.read().split(b"\0") if part]
    except OSError:
        return []


def requested_processes(arguments: Sequence[str]) -> int | None:
    """The value of `--num_processes` in a launcher's command line, if any."""
    for i, part in enumerate(arguments):
        for flag in ("--num_processes", "--num-processes"):
            value = part[len(flag) + 1 :] if part.startswith(flag + "=") else None
            if part == flag and i + 1 < len(arguments):
                value = arguments[i + 1]
            if value is not None and value.isdigit():
                return int(value)
    return None


def single_process_launch_warning(
    num_processes: int, environ: Mapping[str, str] | None = None, launcher: Sequence[str] | None = None
) -> str | None:
    """A warning when more processes were asked of `accelerate launch` than run, else `None`.

    Args:
        num_processes: processes the `Accelerator` sees.
        environ: the environment (default `os.environ`).
        launcher: the launcher's command line (default: read from the parent process).
    """
    environ = os.environ if environ is None else environ
    simple_launcher = "ACCELERATE_DYNAMO_BACKEND" in environ and "WORLD_SIZE" not in environ
    if num_processes > 1 or not simple_launcher or "MASTER_ADDR" not in environ:
        return None
    asked = requested_processes(launcher_arguments() if launcher is None else launcher)
    if asked is not None and asked <= 1:
        return None
    n = asked or "N"
    return (
        f"warning: accelerate launch was asked for {n} processes but started 1: without --multi_gpu it runs a single "
        f"process. For DDP on CPU run `{CPU_DDP_COMMAND.format(n=n)}`"
    )
