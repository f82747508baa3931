"""Atomic checkpoints and run-folder safety: nothing already on disk is replaced without being asked.

- A run folder is recognised by its marker, `hf_icl_run.json` (written before any other output; older runs by their
  `metrics.json` or checkpoints). `--overwrite` deletes the entries a run writes (:func:`run_outputs`) and nothing
  else; a non-empty folder that is not a run is refused.
- `--resume` refuses a run whose saved settings differ in a field of :data:`RESUME_FIELDS`, skips checkpoints whose
  files are damaged (:func:`checkpoint_problem`: trainer state, weights, random-generator states), and
  :func:`load_checkpoint` falls back from the newest checkpoint to the previous complete one when loading fails.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from ..utils.atomic_files import clean_leftovers, write_folder_atomic, write_json_atomic  # noqa: F401 (re-exported)
from ..utils.run_locks import LOCK_FILE
from ..utils.validation import one_line

CHECKPOINT_PREFIX = "step_"
STATE_FILE = "trainer_state.json"
RUN_MARKER = "hf_icl_run.json"
RANDOM_STATES = "random_states"  # Accelerate's `RNG_STATE_NAME`: `random_states_<rank>.pkl` in every checkpoint
RANDOM_STATE_KEYS: tuple[str, ...] = ("random_state", "numpy_random_seed", "torch_manual_seed")
"""The generators every checkpoint's random-states file must hold (Python's, numpy's, torch's CPU one)."""
RUN_OUTPUTS: tuple[str, ...] = (
    RUN_MARKER, "checkpoints", "model", "metrics.json", "summary.md", "training_curves.png", "hf_icl", "wandb",
    "validation_history.jsonl", "STOP",  # `training.progress`: live validation records, a stop request
)
"""Top-level entries a run writes (`hf_icl` holds TensorBoard logs, `wandb` the wandb run files), besides its task
family's plot; a new report file must be added here, or `--overwrite` will leave it behind."""
RESUME_FIELDS: tuple[str, ...] = (
    "architecture", "preset", "overrides", "task", "n_train", "task_seed", "task_options", "augment",
)
"""Run arguments a resumed run must share with the saved run: they fix the model's shape and the data. The task
family's task options are compared with their values resolved (:func:`~hf_icl.tasks.run_task_options`), so a run
saved when `train_on_delimiter` was a top-level run argument resumes under `task_options`."""


class ResumeError(RuntimeError):
    """No checkpoint of the run can be loaded."""


def checkpoint_dir(output_dir: Path) -> Path:
    return output_dir / "checkpoints"


def completed_checkpoints(output_dir: Path) -> list[Path]:
    """Completed checkpoints, newest first. Half-written ones (`.tmp-*`) are ignored."""
    root = checkpoint_dir(output_dir)
    if not root.is_dir():
        return []
    done = [
        p for p in root.glob(f"{CHECKPOINT_PREFIX}*")
        if (p / STATE_FILE).is_file() and p.name[len(CHECKPOINT_PREFIX) :].isdigit()
    ]
    return sorted(done, key=lambda p: int(p.name[len(CHECKPOINT_PREFIX) :]), reverse=True)


def latest_checkpoint(output_dir: Path) -> Path | None:
    """The completed checkpoint with the highest step, or `None`."""
    return next(iter(completed_checkpoints(output_dir)), None)


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
        if tmp.is_symlink():  # planted: removed, never followed
            tmp.unlink()
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
    accelerator.wait_for_everyone()
    try:
        accelerator.save_state(str(tmp))
        accelerator.wait_for_everyone()
        if accelerator.is_main_process:
            write_json_atomic(tmp / STATE_FILE, trainer_state)
    except BaseException:  # a full disk: the completed checkpoints stay, the half-written one goes
        if accelerator.is_main_process:
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    if accelerator.is_main_process:
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


def checkpoint_problem(checkpoint: Path) -> str | None:
    """What makes a checkpoint unloadable, found without loading it (a damaged state file or weights), else `None`."""
    from safetensors import safe_open

    try:
        state = load_trainer_state(checkpoint)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        return f"{STATE_FILE} is unreadable ({type(err).__name__}: {one_line(err)[:120]})"
    if not isinstance(state, dict) or not isinstance(state.get("global_step"), int):
        return f"{STATE_FILE} has no integer global_step"
    for weights in sorted(checkpoint.glob("*.safetensors")):
        try:
            with safe_open(str(weights), "pt"):
                pass
        except Exception as err:  # safetensors raises its own error type for truncated or garbled files
            return f"{weights.name} is damaged ({one_line(err)[:120]})"
    for name in sorted(p.name for p in checkpoint.iterdir() if p.suffix in (".bin", ".pkl", ".pt")):
        if (checkpoint / name).stat().st_size == 0:
            return f"{name} is empty"
    states = sorted(checkpoint.glob(f"{RANDOM_STATES}_*.pkl")) or [checkpoint / f"{RANDOM_STATES}_0.pkl"]
    return next(filter(None, map(random_states_problem, states)), None)


def random_states_problem(path: Path) -> str | None:
    """What makes a checkpoint's random-generator states (`random_states_<rank>.pkl`) unusable, else `None`.

    Accelerate skips such a file with a log message and resumes from whatever state the generators are in, so a run
    with dropout would silently continue on other random numbers; a resume treats it like damaged weights instead.
    """
    from accelerate.utils import load

    if not path.is_file():
        return f"{path.name} is missing (the random-generator states of process {path.stem.rsplit('_', 1)[-1]})"
    try:
        states = load(path, map_location="cpu")
    except Exception as err:  # torch.load raises many types for a truncated or garbled file
        return f"{path.name} is unreadable ({type(err).__name__}: {one_line(err)[:120]})"
    missing = [key for key in RANDOM_STATE_KEYS if not isinstance(states, dict) or key not in states]
    return f"{path.name} lacks the states of {', '.join(missing)}" if missing else None


def load_checkpoint(accelerator, candidates: list[Path]) -> tuple[Path, dict]:
    """Load the newest of `candidates` that loads on every process, falling back to older ones and saying so.

    Args:
        accelerator: the run's `Accelerator`, after `prepare` (every process must call this).
        candidates: completed checkpoints, newest first.

    Returns:
        `(checkpoint, trainer_state)` of the one loaded.

    Raises:
        ResumeError: none of them loads.
    """
    import torch

    for i, checkpoint in enumerate(candidates):
        error = None
        try:
            trainer_state = load_trainer_state(checkpoint)
            error = random_states_problem(checkpoint / f"{RANDOM_STATES}_{accelerator.process_index}.pkl")
            if error is None:
                accelerator.load_state(str(checkpoint))
        except Exception as err:  # a damaged file of any kind, or weights of another shape
            error = f"{type(err).__name__}: {one_line(err)[:200]}"
        failed = torch.tensor([error is not None], dtype=torch.float32, device=accelerator.device)
        if accelerator.num_processes > 1:
            failed = accelerator.reduce(failed, "max")
        if not failed.item():
            return checkpoint, trainer_state
        then = f"falling back to {candidates[i + 1].name}" if i + 1 < len(candidates) else "no older one is left"
        accelerator.print(f"warning: checkpoint {checkpoint} does not load ({error or 'on another process'}); {then}")
    raise ResumeError(
        f"argument --resume: no checkpoint under {checkpoint_dir(candidates[0].parent.parent)} loads (see the "
        "warnings above); nothing was changed"
    )


def checkpoints_that_fit(
    model, candidates: list[Path], output_dir: Path, described: str
) -> tuple[list[Path], list[str]]:
    """The checkpoints among `candidates` whose saved weights are exactly `model`'s (its keys and shapes, read from
    the safetensors headers; :func:`hf_icl.evaluation.checkpoint_files.weights_mismatch`), and a warning for each
    one skipped. A resume would otherwise fail inside Accelerate's loading with a truncated list of keys, once per
    checkpoint, or load into a model the saved settings no longer describe.

    Args:
        model: the model the run's settings build, before `prepare`.
        candidates: completed checkpoints, newest first.
        output_dir: the run folder (for the message).
        described: the model's architecture, preset and overrides, as the message names them.

    Raises:
        ResumeError: none fits; one line naming the marker, the weights file and the keys that differ.
    """
    from ..evaluation.checkpoint_files import weights_mismatch

    fitting, skipped = [], []
    for checkpoint in candidates:
        files = sorted(checkpoint.glob("model*.safetensors"))[:1]  # Accelerate's file of the first (only) model
        mismatch = weights_mismatch(model, files)
        (skipped.append((files[0], mismatch)) if mismatch else fitting.append(checkpoint))
    if not fitting:
        weights, mismatch = skipped[0]
        raise ResumeError(
            f"argument --resume: {weights} does not hold the model that the settings in {output_dir / RUN_MARKER} "
            f"build ({described}): {mismatch}; the saved settings (or this hf_icl's preset) changed since the "
            "checkpoint was written: restore them, or start again with --overwrite; nothing was changed"
        )
    warnings = [f"warning: skipping checkpoint {w.parent}: {w.name} does not fit the model ({m})" for w, m in skipped]
    return fitting, warnings


def run_outputs() -> set[str]:
    """Names of the top-level entries a run may write: :data:`RUN_OUTPUTS`, every family's plot, their temporaries."""
    from ..tasks import FAMILIES

    names = set(RUN_OUTPUTS) | {family.plot_name for family in FAMILIES.values()}
    return names | {f"{prefix}{name}" for name in names for prefix in (".tmp-", ".old-")} | {LOCK_FILE}


def folder_entries(output_dir: Path) -> list[Path]:
    """The entries of a run folder, apart from the lock file of the run that holds it."""
    if not output_dir.is_dir():
        return []
    return sorted(entry for entry in output_dir.iterdir() if entry.name != LOCK_FILE)


def saved_run_config(output_dir: Path, file: str = RUN_MARKER) -> dict | None:
    """The run arguments recorded in a run folder's marker (or another `file` with a `run_config`), or `None`."""
    try:
        config = json.loads((output_dir / file).read_text()).get("run_config")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
        return None
    return config if isinstance(config, dict) else None


def read_run_marker(output_dir: Path) -> dict | None:
    """The marker of a run folder (`{"format": ..., "run_config": {...}, ...}`), or `None` where there is none.

    Raises:
        ValueError: the marker exists but is damaged (not JSON, or without a `run_config` mapping).
    """
    path = output_dir / RUN_MARKER
    if not path.exists():
        return None
    try:
        marker = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(
            f"argument --resume: {path} is damaged ({type(err).__name__}: {one_line(err)[:120]}), so the saved "
            "settings cannot be checked: restore it, or pass --overwrite to start the run again"
        ) from None
    if not isinstance(marker, dict) or not isinstance(marker.get("run_config"), dict):
        raise ValueError(
            f"argument --resume: {path} holds no run_config mapping, so the saved settings cannot be checked: "
            "restore it, or pass --overwrite to start the run again"
        )
    return marker


def is_run_folder(output_dir: Path) -> bool:
    """Whether `output_dir` holds an hf_icl run: its marker, or (runs from before the marker) a `metrics.json` with
    a run config, or completed checkpoints."""
    return (
        (output_dir / RUN_MARKER).is_file()
        or saved_run_config(output_dir, "metrics.json") is not None
        or bool(completed_checkpoints(output_dir))
    )


def write_run_marker(output_dir: Path, run_config: dict, setting_changes: list | None = None) -> None:
    """Mark `output_dir` as a run of ours (first thing a run writes), recording its arguments and, after a resume
    with `--allow-changed-settings`, every change of settings (`[{"step": ..., "changes": {field: {"saved": ...,
    "now": ...}}}]`)."""
    output_dir.mkdir(parents=True, exist_ok=True)
    marker = {"format": "hf_icl run", "run_config": run_config}
    if setting_changes:
        marker["setting_changes"] = setting_changes
    write_json_atomic(output_dir / RUN_MARKER, marker)


def clear_run_folder(output_dir: Path) -> list[str]:
    """Delete what a run wrote in `output_dir` (:func:`run_outputs`); returns the names of the entries kept.

    Raises:
        FileExistsError: `output_dir` is not empty and is not a run (nothing is deleted).
    """
    entries = folder_entries(output_dir)
    if entries and not is_run_folder(output_dir):
        raise FileExistsError(not_a_run_message(output_dir))
    ours, kept = run_outputs(), []
    # The marker goes last (then `metrics.json`, which also marks older runs): a clearing that is killed midway leaves
    # a folder that is still recognised as a run, so the next `--overwrite` finishes it.
    last = {RUN_MARKER: 2, "metrics.json": 1}
    for entry in sorted(entries, key=lambda entry: last.get(entry.name, 0)):
        if entry.name not in ours:
            kept.append(entry.name)
        elif entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    return kept


def not_a_run_message(output_dir: Path) -> str:
    return (
        f"argument --output-dir: {output_dir} is not empty and holds no hf_icl run (no {RUN_MARKER}); "
        "nothing was changed: choose a new or empty folder"
    )


def resume_differences(saved: dict | None, current: dict) -> list[str]:
    """`"field: saved X, now Y"` for every field of :data:`RESUME_FIELDS` where two run configs differ."""
    if saved is None:
        return []

    def normal(value):
        return json.loads(json.dumps(value, sort_keys=True, default=str))

    saved, current = resolved_task_options(saved), resolved_task_options(current)
    return [
        f"{field}: saved {saved.get(field)!r}, now {current.get(field)!r}"
        for field in RESUME_FIELDS
        if field in saved and normal(saved.get(field)) != normal(current.get(field))
    ]


def resolved_task_options(config: dict) -> dict:
    """`config` with its `task_options` holding every task option of its task's family, resolved."""
    from ..tasks import list_tasks, run_task_options

    if config.get("task") not in list_tasks():
        return config
    return {**config, "task_options": run_task_options(config["task"], config.get("task_options") or {}, config)}


def prepare_output_dir(
    output_dir: Path, resume: bool, overwrite: bool, run_config: dict | None = None
) -> tuple[list[Path], list[str]]:
    """Check the run folder before any work; return the checkpoints to try when resuming, and warnings.

    Args:
        output_dir: the run folder.
        resume: continue the run there.
        overwrite: replace the run there (its outputs only).
        run_config: the new run's arguments, compared with the saved run's when resuming.

    Returns:
        `(checkpoints, warnings)`: with `resume`, the loadable completed checkpoints, newest first, and a warning for
        each damaged one skipped; otherwise `([], [])`.

    Raises:
        FileExistsError: `output_dir` is a file, a non-empty folder that is not a run, or a run and neither
            `resume` nor `overwrite` was given.
        ValueError: resuming with settings that differ from the saved run's.
        FileNotFoundError: resuming without a loadable checkpoint.
    """
    if output_dir.exists() and not output_dir.is_dir():
        raise FileExistsError(f"argument --output-dir: {output_dir} is a file, not a folder")
    has_entries = bool(folder_entries(output_dir))
    if has_entries and not is_run_folder(output_dir):
        raise FileExistsError(not_a_run_message(output_dir))
    if resume:
        differences = resume_differences(saved_run_config(output_dir), run_config or {})
        if differences:
            raise ValueError(
                f"argument --resume: the run in {output_dir} was started with other settings ("
                + "; ".join(differences) + "): pass the saved values, or choose another --output-dir"
            )
        checkpoints, warnings = [], []
        for checkpoint in completed_checkpoints(output_dir):
            problem = checkpoint_problem(checkpoint)
            if problem is None:
                checkpoints.append(checkpoint)
            else:
                warnings.append(f"warning: skipping checkpoint {checkpoint}: {problem}")
        if not checkpoints:
            found = f" ({'; '.join(w.split(': ', 1)[1] for w in warnings)})" if warnings else (
                ": the run stopped before its first checkpoint; pass --overwrite instead to start it again"
            )
            raise FileNotFoundError(
                f"argument --resume: no loadable completed checkpoint under {checkpoint_dir(output_dir)}{found}"
            )
        if warnings:
            warnings.append(f"warning: resuming from the older checkpoint {checkpoints[0]}")
        return checkpoints, warnings
    if has_entries and not overwrite:
        raise FileExistsError(
            f"{output_dir} already holds a run; pass --resume to continue it, --overwrite to replace it, "
            "or choose another --output-dir"
        )
    return [], []
