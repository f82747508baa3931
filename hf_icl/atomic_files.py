"""Write-then-rename for every file and folder hf_icl writes, so a crash never leaves a half-written one in place.

A reader (or a resumed run) sees either the old file or the new one. The temporary sits beside its target as
`.tmp-<name>` (same file system, so `os.replace` is atomic; same suffix, so `savefig` picks the same format). A failed
write removes its temporary; what a killed process leaves (`.tmp-*`, and `.old-*` from the middle of a folder swap) is
cleaned by :func:`clean_leftovers` when the next command starts writing there.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yields a temporary path beside `path`; whatever the block writes there replaces `path` when it succeeds.

    Args:
        path: the final file.

    Example: `with atomic_path(out / "curve.png") as tmp: fig.savefig(tmp)`.
    """
    path = Path(path)
    tmp = path.with_name(f".tmp-{path.name}")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write `text` (UTF-8) to `path` through a synced temporary file and a rename."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


def write_json_atomic(path: str | Path, payload) -> None:
    """`write_text_atomic` of `payload` as indented JSON (keys sorted; non-JSON values as `str`)."""
    write_text_atomic(path, json.dumps(payload, indent=2, sort_keys=True, default=str))


def write_folder_atomic(final: str | Path, write: Callable[[Path], None]) -> None:
    """Call `write(tmp_folder)`, then move it into place as `final` (replacing an older one only at the end)."""
    final = Path(final)
    tmp = final.with_name(f".tmp-{final.name}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        write(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = final.with_name(f".old-{final.name}")
    if final.exists():
        shutil.rmtree(old, ignore_errors=True)
        os.replace(final, old)
    os.replace(tmp, final)
    shutil.rmtree(old, ignore_errors=True)


TEMPORARY_PREFIXES = (".tmp-", ".old-")


def clean_leftovers(folder: str | Path) -> list[str]:
    """Finish what killed writes left in `folder`: an `.old-X` beside no `X` (a folder swap cut between its two
    renames) is moved back to `X`; every other `.old-*` and every `.tmp-*` is removed.

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
        if entry.name.startswith(".old-") and not target.exists():
            os.replace(entry, target)
        elif entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        cleaned.append(entry.name)
    return cleaned
