"""Lock files that let several sweep processes share one output folder without training a point twice.

A lock is a file created with `O_CREAT | O_EXCL` (atomic on local file systems and on NFSv3 and later) holding the
holder's host name and PID as JSON. A lock whose holder ran on this host and is gone (killed, crashed) is stale and
is taken over; a lock from another host cannot be checked from here and stays until its holder removes it or a
person deletes it (the skip message names the file).
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def holder_is_gone(lock: Path) -> bool:
    """True when `lock` was written by a process of this host that no longer runs."""
    try:
        holder = json.loads(lock.read_text())
    except (OSError, ValueError):  # vanished, or its holder is still writing it
        return False
    if holder.get("host") != socket.gethostname():
        return False
    try:
        os.kill(int(holder["pid"]), 0)  # signal 0: only checks that the process exists
    except ProcessLookupError:
        return True
    except (PermissionError, KeyError, ValueError):
        return False
    return False


def try_lock(lock: Path) -> bool:
    """Create `lock` for this process; take it over if its holder is gone. False where a live holder has it."""
    for _ in range(2):
        try:
            descriptor = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            if not holder_is_gone(lock):
                return False
            lock.unlink(missing_ok=True)
            continue
        with os.fdopen(descriptor, "w") as handle:
            json.dump({"host": socket.gethostname(), "pid": os.getpid()}, handle)
        return True
    return False


@contextmanager
def claimed(lock: str | Path) -> Iterator[bool]:
    """Yields True while this process holds `lock` (removed on exit), False where another live process holds it.

    Args:
        lock: the lock file's path; its folder must exist.
    """
    lock = Path(lock)
    held = try_lock(lock)
    try:
        yield held
    finally:
        if held:
            lock.unlink(missing_ok=True)
