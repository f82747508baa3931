"""Write-then-rename for every file and folder hf_icl writes, so a crash never leaves a half-written one in place.

A reader (or a resumed run) sees either the old file or the new one. The temporary sits beside its target as
`.tmp-<random>-<name>` (same file system, so `os.replace` is atomic; same suffix, so `savefig` picks the same format)
and is created exclusively (`O_CREAT | O_EXCL | O_NOFOLLOW`, a fresh random name on a clash): a file or symlink
planted under a predictable name is never followed or overwritten, and two writers of one target never share a
temporary. A failed write removes its temporary; what a killed process leaves (`.tmp-*`, and `.old-*` from the middle
of a folder swap) is cleaned by :func:`clean_leftovers` when the next command starts writing there.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

EXCLUSIVE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)


def exclusive_temporary(path: Path, folder: bool = False) -> tuple[Path, int | None]:
    """Create a new, empty temporary beside `path` that no other process or leftover can own.

    Args:
        path: the final file or folder.
        folder: create a folder (`os.mkdir`, exclusive too) instead of a file.

    Returns:
        `(temporary, fd)`: the file's descriptor opened for writing, or `None` for a folder.
    """
    for _ in range(100):
        tmp = path.with_name(f".tmp-{secrets.token_hex(4)}-{path.name}")
        try:
            if folder:
                os.mkdir(tmp)  # the umask applies, as for any folder hf_icl writes
                return tmp, None
            return tmp, os.open(tmp, EXCLUSIVE_FLAGS, 0o666)
        except FileExistsError:  # a clash with another writer, or something planted: draw another name
            continue
    raise FileExistsError(f"{path.parent} holds 100 temporaries named like {path.name}'s; remove its .tmp-* entries")


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yields a new temporary file beside `path` (created exclusively, empty); whatever the block writes there
    replaces `path` when it succeeds.

    Args:
        path: the final file.

    Example: `with atomic_path(out / "curve.png") as tmp: fig.savefig(tmp)`.
    """
    path = Path(path)
    tmp, fd = exclusive_temporary(path)
    os.close(fd)
    try:
        yield tmp
        os.replace(tmp, path)  # replaces a symlink at `path` itself, never the file it points to
    finally:
        tmp.unlink(missing_ok=True)


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write `text` (UTF-8) to `path` through a synced temporary file and a rename.

    The text goes through the descriptor that created the temporary, so nothing can be swapped in between.
    """
    path = Path(path)
    tmp, fd = exclusive_temporary(path)
    try:
        with open(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_json_atomic(path: str | Path, payload) -> None:
    """`write_text_atomic` of `payload` as indented JSON (keys sorted; non-JSON values as `str`)."""
    write_text_atomic(path, json.dumps(payload, indent=2, sort_keys=True, default=str))


def write_folder_atomic(final: str | Path, write: Callable[[Path], None]) -> None:
    """Call `write(tmp_folder)`, then move it into place as `final` (replacing an older one only at the end)."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp, _ = exclusive_temporary(final, folder=True)
    try:
        write(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = final.with_name(f".old-{final.name}")
    if final.exists():
        if old.is_symlink():  # planted: removed, never followed
            old.unlink()
        shutil.rmtree(old, ignore_errors=True)
        os.replace(final, old)
    os.replace(tmp, final)
    shutil.rmtree(old, ignore_errors=True)


TEMPORARY_PREFIXES = (".tmp-", ".old-")


def clean_leftovers(folder: str | Path) -> list[str]:
    """Finish what killed writes left in `folder`: an `.old-X` beside no `X` (a folder swap cut between its two
    renames) is moved back to `X`; every other `.old-*` and every `.tmp-*` is removed (a symlink too, unfollowed).

    Args:
        folder: a folder hf_icl writes into (nothing happens if it does not exist).

    Returns:
        The names removed or restored.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    cleaned = []
    for entry in sorted(folder.iterdir()):
        if not entry.name.startswith(TEMPORARY_PREFIXES):
            continue
        target = folder / entry.name[len(".tmp-") :]
        if entry.name.startswith(".old-") and not os.path.lexists(target) and not entry.is_symlink():
            os.replace(entry, target)
        elif entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        cleaned.append(entry.name)
    return cleaned
