"""Run folders as the report sees them: `metrics.json` records, grouped into experiments, matched to paper entries.

An **experiment** is the folder holding run folders (a sweep's `output_root`, an `experiments/*.sh` output folder):
its runs share budget and data, so contrasts pair runs of one experiment only. A **setting** is a run's arguments
apart from the seed (and bookkeeping such as the output folder): its seeds are aggregated with the entry's
statistic (mean, or max where the paper reports the best seed). Where an experiment has several matching settings
(a learning-rate sweep, several position schemes), the best is reported, as the papers report their best settings.
"""

from __future__ import annotations

import json
import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from .papers import Entry

BOOKKEEPING = {"seed", "output_dir", "resume", "overwrite", "threads", "report_to", "push_to_hub", "checkpoint_every",
               "keep_checkpoints", "log_every", "eval_batch_size"}  # fmt: skip


@dataclass
class RunRecord:
    """One run: its metrics file (`metrics.json` or `<run>_metrics.json`), experiment, name and implied model config."""

    file: Path
    experiment: str
    name: str
    metrics: dict
    model: dict = field(default_factory=dict)

    @property
    def setting(self) -> str:
        config = self.metrics.get("run_config", {})
        return json.dumps({k: v for k, v in config.items() if k not in BOOKKEEPING}, sort_keys=True, default=str)

    @property
    def seed(self):
        return self.metrics.get("run_config", {}).get("seed")

    def lookup(self, path: str):
        """The value at a dotted path: `model.<field>`, `test.<...>`, `run_config.<...>` or a top-level key."""
        if path.startswith("model."):
            return _walk(self.model, path[len("model.") :])
        return _walk(self.metrics, path)


def _walk(node, path: str):
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _equal(found, expected, options: bool = True) -> bool:
    """A match condition: a list is a choice of values (its items compare as they are), `None` means absent or
    empty, `{not: X}` negates X."""
    if isinstance(expected, dict) and set(expected) == {"not"}:
        return not _equal(found, expected["not"])
    if options and isinstance(expected, list):
        return any(_equal(found, option, options=False) for option in expected)
    if expected is None:
        return found in (None, [], {})
    return found == expected


def matches(record: RunRecord, entry: Entry) -> bool:
    """Whether `record` is a run of `entry`'s task satisfying every condition of `entry.match`."""
    if record.metrics.get("task") != entry.task:
        return False
    return all(_equal(record.lookup(path), expected) for path, expected in entry.match.items())


def model_config(metrics: dict) -> dict:
    """The run's architecture config (preset + overrides, every default filled in), or `{}` if it cannot be built."""
    from ..models import config_for

    run = metrics.get("run_config", {})
    try:
        return config_for(metrics["architecture"], metrics.get("preset", "small"), **run.get("overrides", {})).to_dict()
    except (KeyError, TypeError, ValueError):
        return {}


def find_runs(paths: list[str | Path]) -> list[RunRecord]:
    """Every training run at or below `paths`: `<experiment>/<run>/metrics.json` (a run folder) or
    `<experiment>/<run>_metrics.json` (a copied record). Experiments are named by their folder relative to the
    deepest folder common to all runs.

    Raises:
        FileNotFoundError: a path holds no metrics file.
    """
    files = []
    for path in map(Path, paths):
        found = [path] if path.is_file() else sorted(path.rglob("*metrics.json")) if path.is_dir() else []
        found = [f for f in found if f.name == "metrics.json" or f.name.endswith("_metrics.json")]
        if not found:
            raise FileNotFoundError(f"{path}: no metrics.json here or below")
        files.extend(found)
    places = {f.resolve(): _place(f.resolve()) for f in files if _is_run(f)}
    if not places:
        return []
    common = Path(os.path.commonpath([folder for folder, _ in places.values()]))
    records = []
    for file, (folder, name) in sorted(places.items()):
        metrics = json.loads(file.read_text())
        experiment = str(folder.relative_to(common)) if folder != common else common.name
        records.append(RunRecord(file, experiment, name, metrics, model_config(metrics)))
    return records


def _place(file: Path) -> tuple[Path, str]:
    """(experiment folder, run name) of a metrics file."""
    if file.name == "metrics.json":
        return file.parent.parent, file.parent.name
    return file.parent, file.name[: -len("_metrics.json")]


def _is_run(file: Path) -> bool:
    """Training runs only (`python -m hf_icl.evaluate` folders have no `train`)."""
    try:
        return "train" in json.loads(file.read_text())
    except (OSError, json.JSONDecodeError):
        return False


@dataclass
class Measurement:
    """An entry measured in one experiment: the best setting's value aggregated over its seeds."""

    entry: Entry
    experiment: str
    value: float
    runs: list[RunRecord]
    settings: int
    same_everywhere: bool = False  # every matching setting gives this value (baselines: the test set decides)


def measure(entry: Entry, records: list[RunRecord]) -> list[Measurement]:
    """One `Measurement` per experiment with runs that match `entry` and report its metric."""
    by_experiment: dict[str, dict[str, list[tuple[RunRecord, float]]]] = {}
    for record in records:
        value = record.lookup(f"test.{entry.metric}") if matches(record, entry) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            by_experiment.setdefault(record.experiment, {}).setdefault(record.setting, []).append((record, value))
    measurements = []
    for experiment, settings in sorted(by_experiment.items()):
        aggregate = max if entry.statistic == "max" else statistics.fmean
        candidates = [(aggregate([v for _, v in runs]), [r for r, _ in runs]) for runs in settings.values()]
        pick = max if entry.better == "higher" else min
        value, runs = pick(candidates, key=lambda c: c[0])
        same = len(candidates) > 1 and len({c[0] for c in candidates}) == 1
        measurements.append(Measurement(entry, experiment, float(value), runs, len(settings), same))
    return measurements
