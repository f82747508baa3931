"""The lock files of run folders: a sweep point's claim, and a training run's hold on its folder.

**Sweep claims** (:func:`claimed`) let several sweep processes share one output folder without training a point twice.

A lock is a file created with `O_CREAT | O_EXCL` (atomic on local file systems and on NFSv3 and later) holding the
holder's host name, PID, and (on Linux) the boot's id and the process's start time as JSON. A lock whose holder ran
on this host and is gone (killed, crashed) is stale and is taken over. "Gone" is checked by more than the PID: after a
reboot, or once the kernel has handed the PID to another process, a PID alone would keep a dead holder's lock alive,
so a lock whose boot id or start time differs from the live process's is stale too. A lock from another host cannot
be checked from here and stays until its holder removes it or a person deletes it (the skip message names the file).
A lock that is empty or not a holder record is held for :data:`UNREADABLE_LOCK_GRACE_S` after it was written (its
holder may be writing it), then stale.

**Run-folder locks** (:class:`RunFolderLock`): `train.py` holds an exclusive lock on `<run>/.hf_icl_run.lock` from
its first check of the folder to its end. The lock is `flock` on that file (POSIX), so the kernel releases it when
its process ends in any way (kill -9 included): a lock file left by a dead run never blocks the next one. The holder
writes its pid and host into the file, and a second run into the folder is refused with one line naming them. The
lock file is removed when the run ends, and so is the folder when the run created it and left it empty (a run that
fails its checks leaves the folder as it found it). Without `fcntl` (Windows) runs are not locked.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no flock
    fcntl = None

UNREADABLE_LOCK_GRACE_S = 60.0
"""How long a lock without a readable holder record counts as held. Its holder writes the record right after creating
the file, so a lock still empty or garbled after this was left by a process that died in between (a full disk, a
kill) and is stale, whatever host made it."""


def boot_id() -> str | None:
    """This boot's id (Linux: a random UUID per boot), `None` where the system does not expose one."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def process_start_time(pid: int) -> int | None:
    """When process `pid` started, in clock ticks since boot (Linux `/proc/<pid>/stat`), `None` where unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])  # field 22; the command name before ")" may hold spaces


def holder_record(pid: int | None = None) -> dict:
    """What a lock says about its holder: host, PID, and where known the boot id and the process's start time."""
    pid = os.getpid() if pid is None else pid
    return {"host": socket.gethostname(), "pid": pid, "boot_id": boot_id(), "start_time": process_start_time(pid)}


def holder_is_gone(lock: Path) -> bool:
    """True when `lock` was written by a process of this host that no longer runs.

    A lock from an earlier boot of this host, or whose PID now belongs to a process that started at another time,
    is gone too. Fields a lock lacks (older locks, systems without `/proc`) are not compared.
    """
    try:
        holder = json.loads(lock.read_text())
        pid = int(holder["pid"])
    except (OSError, ValueError, KeyError, TypeError):  # vanished, its holder is still writing it, or it died doing so
        try:
            return time.time() - lock.stat().st_mtime > UNREADABLE_LOCK_GRACE_S
        except OSError:
            return False
    if holder.get("host") != socket.gethostname():
        return False
    if holder.get("boot_id") is not None and boot_id() is not None and holder["boot_id"] != boot_id():
        return True
    try:
        os.kill(pid, 0)  # signal 0: only checks that the process exists
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    started = process_start_time(pid)
    return holder.get("start_time") is not None and started is not None and holder["start_time"] != started


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
            json.dump(holder_record(), handle)
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


LOCK_FILE = ".hf_icl_run.lock"


class RunFolderLock:
    """The exclusive lock of one run folder, as a context manager (`with RunFolderLock(folder): ...`).

    Args:
        folder: the run folder (created if missing, and removed again on release if it is still empty).

    Raises (on entry):
        ValueError: another live process holds the lock; names its pid and host.
    """

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.path = self.folder / LOCK_FILE
        self.fd: int | None = None
        self.created: Path | None = None

    def __enter__(self) -> RunFolderLock:
        self.acquire()
        return self

    def __exit__(self, *exc_info) -> None:
        self.release()

    def acquire(self) -> None:
        if fcntl is None:
            return
        self.created = create_folder(self.folder)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 200).decode(errors="replace").strip() or "unknown pid"
                os.close(fd)
                self.remove_created_folders()
                raise ValueError(
                    f"argument --output-dir: {self.folder} is in use by another run (pid {holder}, holding "
                    f"{self.path}); nothing was changed: wait for it to end, or choose another --output-dir"
                ) from None
            if same_file(fd, self.path):
                break
            os.close(fd)  # the previous holder removed the file between our open and our lock: lock the new one
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()} on {socket.gethostname()}\n".encode())
        self.fd = fd

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            self.path.unlink()  # while still holding the lock, so nobody locks the file we remove
        except FileNotFoundError:
            pass
        os.close(self.fd)
        self.fd = None
        self.remove_created_folders()

    def remove_created_folders(self) -> None:
        """Remove the folders this lock created, innermost first, as long as they are empty."""
        if self.created is None:
            return
        folder = self.folder
        while True:
            try:
                folder.rmdir()
            except OSError:  # not empty: the run wrote there
                return
            if folder == self.created:
                return
            folder = folder.parent


def create_folder(folder: Path) -> Path | None:
    """`mkdir -p folder`; returns the outermost folder it created, or `None` when `folder` existed."""
    missing = None
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            break
        missing = candidate
    folder.mkdir(parents=True, exist_ok=True)
    return missing


def same_file(fd: int, path: Path) -> bool:
    """Whether the open file `fd` is still the file at `path`."""
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False
