"""Run folders as the report sees them: `metrics.json` records, their experiments and settings, and their scale.

An **experiment** is the folder holding run folders (a sweep's `output_root`, an `experiments/*.sh` output folder):
its runs share budget and data, so a contrast pairs runs of one experiment only. A **setting** is a run's arguments
apart from the seed and bookkeeping (output folder, threads, logging); its seeds are aggregated (mean ± sd, or the
best seed where the paper reports its best seed).
"""

from __future__ import annotations

import functools
import json
import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from ..training.resume_settings import BOOKKEEPING_FIELDS
from .papers import Entry

BOOKKEEPING = {"seed", "shared_overrides", *BOOKKEEPING_FIELDS} - {"eval_every", "imports"}
"""Run arguments that do not make another setting: the seed, the shared overrides as given (`shared_overrides`: the
ones the architecture reads are recorded again in `overrides`, which the setting compares, and the others changed
nothing; so a seed given `position_embedding` as an override and one given it as a shared override are one setting),
and what a resume takes as given (`BOOKKEEPING_FIELDS`, `--allow-changed-settings` among them: what a resume changed
is in the saved settings), except `imports` (a plug-in may define the model) and `eval_every` (a setting's validation
history is read at its steps)."""


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
        config = normalized_arguments(self.metrics.get("run_config", {}))
        key = {k: v for k, v in config.items() if k not in BOOKKEEPING}
        if key.get("overrides"):  # an override that sets a field to its preset's value is no override
            defaults = preset_defaults(self.metrics.get("architecture"), self.metrics.get("preset", "small"))
            kept = {k: v for k, v in key["overrides"].items() if defaults.get(k, _ABSENT) != _as_json(v)}
            key = {k: v for k, v in key.items() if k != "overrides"} | ({"overrides": kept} if kept else {})
        return json.dumps([self.metrics.get("task"), key], sort_keys=True, default=str)

    @property
    def seed(self):
        return self.metrics.get("run_config", {}).get("seed")

    def lookup(self, path: str):
        """The value at a dotted path: `model.<field>` (the rebuilt config), or any path into metrics.json (`test.`,
        `validation.`, `train.`, `run_config.` or a top-level key); an integer part indexes a list."""
        if path.startswith("model.") and not path.startswith("model.model"):
            return walk(self.model, path[len("model.") :])
        return walk(self.metrics, path)


def walk(node, path: str):
    for part in path.split("."):
        if isinstance(node, list) and part.lstrip("-").isdigit() and -len(node) <= int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return None
    return node


def number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


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


def matches(record: RunRecord, task: str | None, conditions: dict) -> bool:
    """Whether `record` is a run of `task` (any task if `None`) satisfying every condition."""
    if task is not None and record.metrics.get("task") != task:
        return False
    return all(_equal(record.lookup(path), expected) for path, expected in conditions.items())


@functools.cache
def preset_defaults(architecture: str | None, preset: str) -> dict:
    """The config fields of `architecture`'s `preset` with every default filled in, as JSON values (read-only: cached
    per architecture and preset), or `{}` where it cannot be built (an architecture no longer registered)."""
    from ..architectures import ARCHITECTURES

    try:
        return _as_json(ARCHITECTURES[architecture].config_class.from_preset(preset).to_dict())
    except (KeyError, TypeError, ValueError):
        return {}


_ABSENT = object()


@functools.cache
def argument_defaults() -> dict:
    """`RunArguments`' default per field, as JSON values (fields without a default are left out)."""
    from dataclasses import MISSING, fields

    from ..training.run_schema import RunArguments

    return {f.name: _as_json(f.default) for f in fields(RunArguments) if f.default is not MISSING}


def normalized_arguments(config: dict) -> dict:
    """A recorded `run_config` as the setting it stands for, whichever code version wrote it: an argument that is
    null, empty or at its `RunArguments` default is one not given (a run made before the argument existed has no key,
    and one code version writes `{}` or the default where another wrote nothing), and an old top-level argument that
    became a task option (`training.legacy`) moves into `task_options` where the run's task declares it, and is
    dropped where it does not (that task ignored it)."""
    from ..tasks import family_of, list_tasks
    from ..training.legacy import legacy_task_options

    defaults, config = argument_defaults(), dict(config)
    task = config.get("task")
    declared = {o.name for o in family_of(task).training_options} if task in list_tasks() else set()
    for name in legacy_task_options():
        if name in config:
            value = config.pop(name)
            if name in declared and value is not None:
                config["task_options"] = {name: value, **(config.get("task_options") or {})}
    return {
        k: v for k, v in config.items() if v not in (None, {}, []) and _as_json(v) != defaults.get(k, _ABSENT)
    }


def _as_json(value):
    return json.loads(json.dumps(value, default=str))


def model_config(metrics: dict) -> dict:
    """The run's architecture config (preset + overrides, every default filled in), or `{}` if it cannot be built."""
    from ..architectures import ARCHITECTURES

    run = metrics.get("run_config", {})
    try:
        # Built leniently (not `config_for`): a recorded run's overrides were valid when it ran.
        config_class = ARCHITECTURES[metrics["architecture"]].config_class
        config = config_class.from_preset(metrics.get("preset", "small"), **run.get("overrides", {}))
        return config.to_dict()
    except (KeyError, TypeError, ValueError):
        return {}


def find_runs(paths: list[str | Path]) -> list[RunRecord]:
    """Every training run at or below `paths` (:func:`scan_runs`, without the skipped files)."""
    return scan_runs(paths)[0]


def scan_runs(paths: list[str | Path]) -> tuple[list[RunRecord], list[tuple[Path, str]]]:
    """Every training run at or below `paths`: `<experiment>/<run>/metrics.json` (a run folder) or
    `<experiment>/<run>_metrics.json` (a copied record), and every metrics file that is not one, with the reason.
    Experiments are named by their folder relative to the deepest folder common to all runs.

    Returns:
        `(records, skipped)`: skipped lists `(file, reason)`: not JSON, not a training run (an evaluation's
        metrics), or a training run's file of the wrong shape (:func:`shape_problem`).

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
    read, skipped = {}, []
    for file in dict.fromkeys(f.resolve() for f in files):
        metrics, problem = read_metrics(file)
        if problem is None:
            read[file] = metrics
        else:
            skipped.append((file, problem))
    if not read:
        return [], skipped
    places = {file: _place(file) for file in read}
    common = Path(os.path.commonpath([folder for folder, _ in places.values()]))
    records = []
    for file, (folder, name) in sorted(places.items()):
        experiment = str(folder.relative_to(common)) if folder != common else common.name
        records.append(RunRecord(file, experiment, name, read[file], model_config(read[file])))
    return records, skipped


def _place(file: Path) -> tuple[Path, str]:
    """(experiment folder, run name) of a metrics file."""
    if file.name == "metrics.json":
        return file.parent.parent, file.parent.name
    return file.parent, file.name[: -len("_metrics.json")]


MAPPINGS = ("train", "test", "run_config", "validation")
"""Top-level keys of a training run's `metrics.json` that hold mappings (`train` and `test` always)."""
TEXTS = ("task", "task_family", "architecture", "preset")


def read_metrics(file: Path) -> tuple[dict | None, str | None]:
    """`(metrics, None)` for a training run's metrics file, else `(None, why it is skipped)`."""
    try:
        metrics = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        return None, f"not readable JSON ({type(err).__name__}: {' '.join(str(err).split())[:100]})"
    if isinstance(metrics, dict) and "train" not in metrics and isinstance(metrics.get("eval_config"), dict):
        return None, "an evaluation's metrics (python -m hf_icl.evaluate), not a training run"
    problem = shape_problem(metrics)
    return (None, problem) if problem else (metrics, None)


def shape_problem(metrics) -> str | None:
    """What makes `metrics` no training run's `metrics.json` as the report reads it, or `None`."""
    if not isinstance(metrics, dict):
        return f"holds a {type(metrics).__name__}, not a mapping"
    for key in MAPPINGS:
        if key in metrics or key in ("train", "test"):
            value = metrics.get(key)
            if not isinstance(value, dict):
                return f"{key} is {'missing' if key not in metrics else 'a ' + type(value).__name__}, not a mapping"
    model = metrics["test"].get("model", {})
    if not isinstance(model, dict):
        return f"test.model is a {type(model).__name__}, not a mapping"
    for key in TEXTS:
        if metrics.get(key) is not None and not isinstance(metrics[key], str):
            return f"{key}={metrics[key]!r} is not a string"
    parameters = metrics.get("num_parameters", 0)
    if not isinstance(parameters, int) or isinstance(parameters, bool):
        return f"num_parameters={parameters!r} is not an integer"
    return None


CPU_BUDGET_MINUTES = 30
"""The project's budget for one CPU experiment run: about 30 minutes on a 2-core machine (the contributor rules;
issue 27's "≤ 30 CPU minutes per run")."""


def budget_minutes(record: RunRecord) -> float | None:
    """Minutes the run needs on its own cores: `train.cpu_time_s` over its threads (at most the machine's 2), so a
    one-thread run that shared the machine counts its CPU time and a two-thread run its time on both cores. `None`
    where the run recorded no CPU time."""
    cpu = record.metrics.get("train", {}).get("cpu_time_s")
    if not isinstance(cpu, (int, float)):
        return None
    threads = record.metrics.get("run_config", {}).get("threads")
    return cpu / 60 / min(max(threads if isinstance(threads, int) else 1, 1), 2)


def is_over_budget(record: RunRecord) -> bool:
    """Whether the run's :func:`budget_minutes` exceed :data:`CPU_BUDGET_MINUTES` (an untimed run is not)."""
    return (budget_minutes(record) or 0) > CPU_BUDGET_MINUTES


@dataclass
class Setting:
    """The runs of one setting (its seeds), in one experiment."""

    experiment: str
    runs: list[RunRecord]

    @property
    def name(self) -> str:
        names = sorted(r.name for r in self.runs)
        return names[0] if len(names) == 1 else f"{names[0]} (+{len(names) - 1} seed{'s' * (len(names) > 2)})"

    @property
    def where(self) -> str:
        return f"`{self.experiment}` / `{self.name}`"

    def values(self, path: str) -> list[float] | None:
        """The number at `path` in every seed, or `None` if any seed lacks it."""
        found = [number(r.lookup(path)) for r in self.runs]
        return None if any(v is None for v in found) else found

    def value(self, path: str, statistic: str = "mean") -> float | None:
        found = self.values(path)
        if found is None:
            return None
        return max(found) if statistic == "max" else statistics.fmean(found)

    @property
    def seeds(self) -> int:
        return len(self.runs)

    @property
    def over_budget(self) -> bool:
        """Whether any of its runs needed more than the CPU budget (:func:`is_over_budget`)."""
        return any(map(is_over_budget, self.runs))

    def spread(self, path: str) -> float | None:
        found = self.values(path)
        return statistics.stdev(found) if found and len(found) > 1 else None

    def scale(self, entry: Entry) -> list[tuple[str, float, float]]:
        """How this setting falls short of the paper's (`entry.setting`, `entry.proxy`): (label, ours, paper) per
        dimension below the paper's; a proxy is `(proxy, 0, 0)`."""
        notes = [(entry.proxy, 0.0, 0.0)] if entry.proxy else []
        for item in entry.setting:
            found = number(self.runs[0].lookup(item["path"]))
            found = item.get("default") if found is None else found
            if found is not None and found < item["paper"]:
                notes.append((item["label"], float(found), float(item["paper"])))
        return notes

    @property
    def model_key(self) -> tuple:
        """(task, architecture, parameter count): runs of one model that differ in how long they trained."""
        m = self.runs[0].metrics
        return m.get("task"), m.get("architecture"), m.get("num_parameters")

    @property
    def training_sequences(self) -> float:
        """How much the model trained: optimiser steps × global batch size (steps alone where no batch is recorded).

        Steps alone would rank 12,000 steps at batch 64 above 4,000 at batch 256, though the second saw more data.
        """
        steps = self.value("train.steps") or 0.0
        return steps * (self.value("run_config.batch_size") or 1.0)


def scale_text(notes: list[tuple[str, float, float]]) -> str:
    """`[(label, ours, paper)]` of one or more settings as one phrase: ranges per dimension, proxies as given."""
    by_label: dict[str, list[tuple[float, float]]] = {}
    for label, ours, paper in notes:
        by_label.setdefault(label, []).append((ours, paper))
    parts = []
    for label, values in by_label.items():
        if values[0][1] == 0.0:
            parts.append(label)
            continue
        low, high = min(v for v, _ in values), max(v for v, _ in values)
        ours = _num(low) if low == high else f"{_num(low)}–{_num(high)}"
        parts.append(f"{ours} of {_num(values[0][1])} {label}")
    return "; ".join(parts)


def _num(value: float) -> str:
    if value >= 1e6:
        return f"{value / 1e6:.3g}M"
    return f"{value:,.0f}" if float(value).is_integer() or value >= 100 else f"{value:.3g}"


def settings_of(records: list[RunRecord], task: str | None, conditions: dict) -> list[Setting]:
    """The matching runs grouped by experiment and setting, in a stable order."""
    groups: dict[tuple[str, str], list[RunRecord]] = {}
    for record in records:
        if matches(record, task, conditions):
            groups.setdefault((record.experiment, record.setting), []).append(record)
    return [Setting(experiment, runs) for (experiment, _), runs in sorted(groups.items(), key=lambda kv: kv[0])]
