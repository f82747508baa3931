"""One run per run folder: `train.py` holds an exclusive lock on `<run>/.hf_icl_run.lock` from its first check of
the folder to its end.

The lock is `flock` on that file (POSIX), so the kernel releases it when its process ends in any way (kill -9
included): a lock file left by a dead run never blocks the next one. The holder writes its pid and host into the file,
and a second run into the folder is refused with one line naming them. The lock file is removed when the run ends, and
so is the folder when the run created it and left it empty (a run that fails its checks leaves the folder as it
found it). Without `fcntl` (Windows) runs are not locked.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no flock
    fcntl = None

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
