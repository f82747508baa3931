"""Atomic checkpoints and run-folder safety: nothing already on disk is replaced without being asked."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

CHECKPOINT_PREFIX = "step_"
STATE_FILE = "trainer_state.json"


def checkpoint_dir(output_dir: Path) -> Path:
    return output_dir / "checkpoints"


def latest_checkpoint(output_dir: Path) -> Path | None:
    """The completed checkpoint with the highest step, or `None`. Half-written ones (`.tmp-*`) are ignored."""
    root = checkpoint_dir(output_dir)
    if not root.is_dir():
        return None
    done = [p for p in root.glob(f"{CHECKPOINT_PREFIX}*") if (p / STATE_FILE).is_file()]
    return max(done, key=lambda p: int(p.name[len(CHECKPOINT_PREFIX) :]), default=None)


def save_checkpoint(accelerator, output_dir: Path, step: int, trainer_state: dict, keep: int) -> Path:
    """`accelerator.save_state` into a temporary folder, then an atomic rename; prunes old checkpoints.

    Args:
        accelerator: the run's `Accelerator` (all processes must call this).
        output_dir: the run folder.
        step: the optimiser step just completed.
        trainer_state: JSON-serialisable loop state (epoch, step in epoch, history, ...).
        keep: how many completed checkpoints to keep.
    """
    root = checkpoint_dir(output_dir)
    final = root / f"{CHECKPOINT_PREFIX}{step}"
    tmp = root / f".tmp-{CHECKPOINT_PREFIX}{step}"
    if accelerator.is_main_process:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
    accelerator.wait_for_everyone()
    accelerator.save_state(str(tmp))
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        write_json_atomic(tmp / STATE_FILE, trainer_state)
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
        completed = sorted(
            (p for p in root.glob(f"{CHECKPOINT_PREFIX}*") if (p / STATE_FILE).is_file()),
            key=lambda p: int(p.name[len(CHECKPOINT_PREFIX) :]),
        )
        for old in completed[:-keep]:
            shutil.rmtree(old, ignore_errors=True)
    accelerator.wait_for_everyone()
    return final


def load_trainer_state(checkpoint: Path) -> dict:
    return json.loads((checkpoint / STATE_FILE).read_text())


def write_json_atomic(path: Path, payload) -> None:
    tmp = path.with_name(f".tmp-{path.name}")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=True, default=str))
    os.replace(tmp, path)


def write_folder_atomic(final: Path, write) -> None:
    """Call `write(tmp_folder)`, then move it into place as `final` (replacing an older one only at the end)."""
    tmp = final.with_name(f".tmp-{final.name}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    write(tmp)
    old = final.with_name(f".old-{final.name}")
    if final.exists():
        shutil.rmtree(old, ignore_errors=True)
        os.replace(final, old)
    os.replace(tmp, final)
    shutil.rmtree(old, ignore_errors=True)


def prepare_output_dir(output_dir: Path, resume: bool, overwrite: bool) -> Path | None:
    """Check the run folder before any work; return the checkpoint to resume from, if any.

    Raises:
        FileExistsError: the folder already holds a run and neither `resume` nor `overwrite` was given.
    """
    has_run = output_dir.is_dir() and any(output_dir.iterdir())
    if resume:
        checkpoint = latest_checkpoint(output_dir)
        if checkpoint is None:
            raise FileNotFoundError(f"--resume: no completed checkpoint under {checkpoint_dir(output_dir)}")
        return checkpoint
    if has_run and not overwrite:
        raise FileExistsError(
            f"{output_dir} already holds a run; pass --resume to continue it, --overwrite to replace it, "
            "or choose another --output-dir"
        )
    return None
