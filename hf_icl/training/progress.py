"""What a running training process shares with other processes through its run folder, while it runs.

- `validation_history.jsonl`: one JSON line per periodic validation (`--eval-every`), appended as it is scored:
  `{"step", "train_wall_s", "train_cpu_s", <the model's numbers on the validation split>}`, the records that
  `metrics.json` lists at the end under `train.validation_history`. A resumed run appends again from its checkpoint,
  so a step can appear twice; the later line is the one the finished run keeps.
- `STOP`: a stop request. At the next optimiser step the run ends as a finished one (a checkpoint, the evaluation,
  the reports and the model), with `train.stopped_by = "stop_requested"`, and removes the file. `touch RUN/STOP`
  ends a run early by hand; `python -m hf_icl.sweep` writes it to prune a search trial.
"""

from __future__ import annotations

import json
from pathlib import Path

VALIDATION_LOG = "validation_history.jsonl"
STOP_FILE = "STOP"
STOPPED_BY_REQUEST = "stop_requested"
"""`train.stopped_by` of a run that ended on a `STOP` request before its last step."""


def append_validation(output_dir: Path, record: dict) -> None:
    """Append one validation record as a JSON line (one `write` of the whole line, flushed)."""
    with open(Path(output_dir) / VALIDATION_LOG, "a", encoding="utf-8") as log:
        log.write(json.dumps(record, sort_keys=True) + "\n")
        log.flush()


def read_validation(output_dir: Path) -> list[dict]:
    """The validation records written so far, one per step (the last line of a step wins), in step order; a line
    being written (no newline yet) is left for the next read."""
    path = Path(output_dir) / VALIDATION_LOG
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return []
    records = {}
    for line in text.split("\n")[:-1]:  # the part after the last newline is unfinished
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("step"), int):
            records[record["step"]] = record
    return [records[step] for step in sorted(records)]


def stop_requested(output_dir: Path) -> bool:
    return (Path(output_dir) / STOP_FILE).exists()


def request_stop(output_dir: Path, reason: str) -> None:
    """Ask the run in `output_dir` to end at its next step (see the module docstring)."""
    Path(output_dir).mkdir(parents=True, exist_ok=True)
    (Path(output_dir) / STOP_FILE).write_text(reason.rstrip("\n") + "\n", encoding="utf-8")


def ended_on_stop_request(output_dir: Path) -> bool:
    """Whether the run in `output_dir` ended on a stop request (its `metrics.json` says so, or it has none yet),
    not by training every step: a request that arrives after the last step stops nothing."""
    metrics = Path(output_dir) / "metrics.json"
    if not metrics.exists():
        return True
    return json.loads(metrics.read_text(encoding="utf-8")).get("train", {}).get("stopped_by") == STOPPED_BY_REQUEST


def clear_stop(output_dir: Path) -> None:
    (Path(output_dir) / STOP_FILE).unlink(missing_ok=True)
