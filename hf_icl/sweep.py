"""`python -m hf_icl.sweep SPEC.yaml [--launcher local|ray|submitit] [--jobs N] [--only KEY=LABEL] [--dry-run]`: a grid
of training runs.

As in zoology and MAD-Lab, a sweep is a base configuration crossed with lists of values (architectures × learning
rates × N × seeds, ...). SPEC.yaml:

    output_root: outputs/sweeps/regbench-ngram-heads   # point P trains in <output_root>/<P's name>
    config: experiments/configs/regbench_cpu.yaml   # optional: a `train.py --config` file under `base`
    base:                                    # run arguments shared by every point (what `train.py --config` reads)
      task: regbench
      n_train: 2500
      max_steps: 240
    grid:                                    # crossed in this order; a mapping names its values
      architecture: [retnet, gla]
      ngram_heads: {none: null, ngh: "1:1,2,3"}
      seed: [0, 1]
    accelerate: [--multi_gpu, --num_processes, "8"]   # optional: each point under `accelerate launch`
    launcher:                                # optional settings of the cluster launchers
      ray: {address: auto, num_cpus: 1, num_gpus: 0}
      submitit: {cluster: slurm, timeout_min: 120, slurm_partition: gpu, gpus_per_node: 8}

`extends: other.yaml` (relative to the spec's folder) makes another spec the defaults: this spec's mappings merge
into its key by key (`base`, `search.space`, ...), `null` removes a key and any other value replaces it, so a family of
searches (one per architecture) shares one file of budget, space and decision rule.

`grid` may also be a list of such mappings: the sweep is their points together (as scikit-learn's `ParameterGrid`
takes a list of grids), so points need not share one seed list (`[{variant: {chosen: ...}, seed: [0, 1, 2]},
{variant: {tried: ...}, seed: [0]}]`); every point's name must still be its own.

The grid axis `variant` names bundles of keys set together (`variant: {gla+ngh: {architecture: gla, ngram_heads:
"1:1,2,3"}, ...}`), for a list of points that is not a full product. `config` and `base` together are what one
`train.py --config` run would read (`base` wins). A variant may name its own `config` file in place of the spec's
(`variant: {retnet: {config: experiments/configs/regbench_zoo/retnet.yaml}, ...}`), so models with their own
recipes train as one experiment (the report pairs runs of one experiment only). Keys of `base` and `grid` are
`RunArguments` fields (`train.py --help`), `override.<config field>` (as `--override`), `shared_override.<config
field>` (as `--shared-override`: applied to the points whose architecture reads the field, so a sweep over
architectures can give the Transformer RoPE without giving it to Mamba), `task_option.<task field>` (as
`--task-option`) or a block feature's field in its flag's syntax (`ngram_heads` as `--ngram-heads`);
`override.<field>: null` (or `task_option.<field>: null`) in a grid value removes that override set by `config` or
`base`, so one variant can drop a field its model does not have (Mamba reads no `num_masked_heads`); an override's
null also removes a shared override of the field, so the preset's default applies (a MambaFormer variant with
`override.position_embedding: null` under a config that shares RoPE trains without positions, as its name says).
A point's name lists every grid key, `key=label` joined by `,`; its run arguments are written to
`<output_root>/<name>.yaml`, its output to `<output_root>/<name>.log`.

Each point is its own process, `python -m hf_icl.train --config <name>.yaml` (a subprocess rather than a call in this
process: every run starts from a fresh Accelerate state, thread setting and memory, a crashed point does not end the
sweep, and the same command runs unchanged on a cluster node). A point whose `metrics.json` exists is skipped, one
with a completed checkpoint continues with `--resume`, one that died before its first checkpoint restarts with
`--overwrite`; so rerunning a sweep finishes what is missing. A finished or resumable point whose saved settings
differ from what the spec now gives it (the `base` was edited) is `changed`: the sweep refuses to start, listing the
differences, unless `--rerun-changed` trains those points again from scratch. A point whose only difference is a
longer run (more `max_steps` or `epochs`) is `extend`ed instead: it continues from its last checkpoint with the
schedule recomputed for the new length, never warming up again (`train.py --resume --allow-changed-settings`).

Several sweep processes may work on one spec at once (a second `--jobs 1` process adds a worker; machines that
share the output folder each run one): a point is claimed by `<output_root>/<name>.lock` while it trains, and the
others skip it. A lock left by a dead process of the same host is taken over; see `utils/run_locks.py`.

The default launcher runs the points on this machine, `--jobs` at a time (default 1: one after another; points whose
threads add up to more than the machine's cores at a time are refused before any run, so give each point
`threads: 1` when jobs > 1); `ray` and `submitit` (SLURM and others; the engine under Hydra's submitit launcher)
are the optional extra `pip install hf-icl[sweep]`. `python -m hf_icl.report <output_root>` reads the runs.
docs/guide.md has a complete spec; in Python, `hf_icl.sweep(spec)` runs one (a path or the same keys as a dict).
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from pathlib import Path

import yaml

from .block_features.feature_registry import feature_options, parse_feature_option
from .plugins import add_import_argument, describing, has_pending, load_pending, preload
from .training.arguments import (
    RunArguments,
    load_yaml_config,
    parse_args,
    read_yaml,
    setting_differences,
)
from .training.checkpoints import latest_checkpoint, saved_run_config
from .utils.run_locks import claimed
from .utils.validation import POSITIVE_INT, CommandLineParser, check_field_values, check_limits, naming

SPEC_KEYS = ("output_root", "config", "base", "grid", "search", "accelerate", "launcher")
LAUNCHERS = ("local", "ray", "submitit")
SWEEP_OWNED = ("output_dir", "resume", "overwrite")
PREFIXED_GROUPS = {"override": "overrides", "shared_override": "shared_overrides", "task_option": "task_options"}
"""Spec-key prefixes that set one entry of a mapping run argument (`override.hidden_size: 128`)."""
PREFIXED = tuple(f"{prefix}." for prefix in PREFIXED_GROUPS)
SWEEP_LIMITS = {"jobs": POSITIVE_INT}
EXTENDS = "extends"  # a spec's key naming the spec whose keys are its defaults
VARIANT = "variant"  # a grid axis whose values each set several keys: {label: {key: value, ...}}


@dataclass
class SweepSpec:
    """A parsed SPEC.yaml (see the module docstring)."""

    output_root: str
    config: str | None = None
    base: dict = field(default_factory=dict)
    grid: dict | list[dict] = field(default_factory=dict)  # one grid, or several whose points add up
    accelerate: list = field(default_factory=list)
    launcher: dict = field(default_factory=dict)
    search: dict | None = None  # a hyperparameter search instead of the grid (`training.search`)


@dataclass
class Point:
    """One run of the grid: its name, its run arguments (as the spec gives them) and, once :func:`check_points` has
    parsed them as `train.py` will, its full run config (every default filled in)."""

    name: str
    arguments: dict
    settings: dict | None = None
    labels: dict[str, str] = field(default_factory=dict)  # grid key (its last dotted part) -> label, as in `name`


def read_spec_file(path: Path) -> dict:
    """One spec file's mapping, as written (before `extends` is followed)."""
    if not path.is_file():
        raise ValueError(f"argument spec: {str(path)!r} is not a file")
    try:
        raw = read_yaml(path.read_text(encoding="utf-8")) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise ValueError(f"argument spec: {str(path)!r} is not valid YAML ({err})") from None
    if not isinstance(raw, dict):
        raise ValueError(
            f"argument spec: {str(path)!r} holds a {type(raw).__name__}, expected a mapping of {', '.join(SPEC_KEYS)}"
        )
    return raw


def merge_into(defaults: dict, changes: dict) -> dict:
    """`defaults` with `changes` laid over it: mappings merge key by key, `null` removes a key, anything else
    replaces."""
    merged = copy.deepcopy(defaults)
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_into(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def resolve_extends(path: Path, seen: tuple[Path, ...] = ()) -> dict:
    """The spec at `path` with the spec its `extends` names (a path relative to `path`'s folder) as its defaults,
    followed to the end of the chain."""
    if path.resolve() in seen:
        chain = " -> ".join(str(p) for p in (*seen, path.resolve()))
        raise ValueError(f"argument spec: 'extends' goes round in a circle ({chain})")
    raw = read_spec_file(path)
    parent = raw.pop(EXTENDS, None)
    if parent is None:
        return raw
    if not isinstance(parent, str) or not parent:
        raise ValueError(f"{path}: extends={parent!r} must be the path of another spec (relative to this file)")
    return merge_into(resolve_extends(path.parent / parent, (*seen, path.resolve())), raw)


def load_spec(path: str | Path) -> SweepSpec:
    """Read and check SPEC.yaml (its `extends` chain followed); errors name the key, the value and what is allowed."""
    raw = resolve_extends(Path(path))
    unknown = sorted(set(raw) - set(SPEC_KEYS))
    if unknown:
        raise ValueError(f"{path}: key {unknown[0]!r} is not one of: {', '.join((*SPEC_KEYS, EXTENDS))}")
    if not raw.get("output_root"):
        raise ValueError(f"{path}: output_root is missing (the folder that holds one run folder per point)")
    check_field_values(SweepSpec, raw, f"{path}:")
    spec = SweepSpec(**raw)
    if spec.config is not None:
        load_yaml_config(Path(spec.config))  # its errors name --config, the field and the value
    for key in spec.base:
        check_key(key)
    for where, grid in grids(spec):
        check_grid(grid, where)
    if spec.search is not None:
        from .training.search import parse_search

        if spec.grid:
            raise ValueError(f"{path}: grid and search exclude each other (a search asks for its own points)")
        parse_search(spec.search, check_key)
    return spec


def grids(spec: SweepSpec) -> list[tuple[str, dict]]:
    """`(where, grid)` for each of the spec's grids: `grid` itself, or each entry of a list of grids."""
    if isinstance(spec.grid, dict):
        return [("grid", spec.grid)] if spec.grid else []
    if not spec.grid or not all(isinstance(grid, dict) and grid for grid in spec.grid):
        raise ValueError(f"grid={spec.grid!r} must be a mapping of key: values, or a non-empty list of such mappings")
    return [(f"grid[{i}]", grid) for i, grid in enumerate(spec.grid)]


def check_grid(grid: dict, where: str) -> None:
    """One grid's keys and values (`where` names it in the errors: `grid`, or `grid[i]` in a list of grids)."""
    for key, values in grid.items():
        if key != VARIANT:
            check_key(key)
        if not isinstance(values, (list, dict)) or not values:
            raise ValueError(f"{where}.{key}={values!r} must be a non-empty list or a mapping of label: value")
    if VARIANT in grid and not isinstance(grid[VARIANT], dict):
        raise ValueError(f"{where}.{VARIANT} must be a mapping of label: {{key: value, ...}}")
    for name, keys in (grid.get(VARIANT) or {}).items():
        if not isinstance(keys, dict):
            raise ValueError(f"{where}.{VARIANT}.{name}={keys!r} must be a mapping of run arguments (key: value)")
        for key in keys:
            if key == "config":  # a variant's own config file in place of the spec's
                load_yaml_config(Path(keys[key]))
                continue
            check_key(key)


def check_key(key: str) -> None:
    allowed = sorted({f.name for f in fields(RunArguments)} - set(SWEEP_OWNED))
    if key in SWEEP_OWNED:
        raise ValueError(f"{key!r} is set by the sweep for every point; remove it from base/grid")
    options = list(feature_options())  # block features' config fields, set in their flags' syntax
    if key not in allowed and key not in options and not key.startswith(PREFIXED):
        raise ValueError(
            f"key {key!r} is not one of: {', '.join([*allowed, *options])}, "
            + ", ".join(f"{prefix}.<field>" for prefix in PREFIXED_GROUPS)
        )


def label(value) -> str:
    """A value as it appears in a point name (no path separators or spaces; `,` and `:` become `+` and `.`)."""
    text = "none" if value is None else value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return re.sub(r"[^A-Za-z0-9._=+-]", "_", text.replace(",", "+").replace(":", "."))


def assign(values: dict, key: str, value) -> None:
    """Set one base/grid key in a dict of run arguments."""
    if key == VARIANT:
        for name, setting in value.items():
            assign(values, name, setting)
    elif key.startswith(PREFIXED):
        prefix, name = key.split(".", 1)
        group = values.setdefault(PREFIXED_GROUPS[prefix], {})
        if value is None:  # null: drop what `config` or `base` set, so the preset's or task's default applies
            group.pop(name, None)
            if prefix == "override":  # a shared override of the field would apply it again where the model reads it
                values.get(PREFIXED_GROUPS["shared_override"], {}).pop(name, None)
        else:
            group[name] = value
    elif key in feature_options():  # a block feature's field, e.g. `ngram_heads: "1:1,2,3"` as its flag reads it
        overrides = values.setdefault("overrides", {})
        overrides.pop(key, None)
        if value:
            overrides[key] = parse_feature_option(key, value)
    elif key == "imports" and isinstance(value, list) and isinstance(values.get(key), list):
        values[key] = list(dict.fromkeys([*values[key], *value]))  # they add up, as train.py's layers do
    else:
        values[key] = value


def expand(spec: SweepSpec) -> list[Point]:
    """Every point of the grid, in the order of `grid`'s keys (the last key varies fastest); for a list of grids,
    each grid's points in turn."""
    points = [point for _, grid in grids(spec) or [("grid", {})] for point in grid_points(spec, grid)]
    if len({p.name for p in points}) != len(points):
        raise ValueError("two grid points have the same name; give the values labels with a mapping (label: value)")
    return points


def grid_points(spec: SweepSpec, grid: dict) -> list[Point]:
    """The points of one grid: `spec`'s config and base crossed with `grid`'s values."""
    axes = [list(values.items()) if isinstance(values, dict) else [(label(v), v) for v in values]
            for values in grid.values()]  # fmt: skip
    points = []
    for combination in itertools.product(*axes):
        variant = next((value for key, (_, value) in zip(grid, combination) if key == VARIANT), {})
        config = variant.get("config", spec.config)  # a variant may name its own config file
        arguments = load_yaml_config(Path(config)) if config else {}
        for key, value in spec.base.items():
            assign(arguments, key, copy.deepcopy(value))
        for key, (_, value) in zip(grid, combination):
            if key == VARIANT:
                value = {k: v for k, v in value.items() if k != "config"}
            assign(arguments, key, copy.deepcopy(value))
        pairs = [(key.split(".")[-1], label(tag)) for key, (tag, _) in zip(grid, combination)]
        name = ",".join(f"{key}={value}" for key, value in pairs) or "run"
        arguments["output_dir"] = str(Path(spec.output_root) / name)
        points.append(Point(name, arguments, labels=dict(pairs)))
    return points


def check_points(points: list[Point]) -> None:
    """Parse every point's arguments as `train.py` will, so a bad value fails before any run starts; each point's
    `settings` become its full run config."""
    with tempfile.TemporaryDirectory() as folder:
        for point in points:
            config = Path(folder) / "point.yaml"
            config.write_text(yaml.safe_dump({k: v for k, v in point.arguments.items() if k != "output_dir"}))
            try:
                point.settings = parse_args(["--config", str(config)]).to_dict()
            except ValueError as err:  # named by the spec's point, not by the temporary --config file
                message = str(err).removeprefix("argument --config: ")
                raise ValueError(f"argument spec: point {point.name}: {message}") from None
            except SystemExit:
                raise ValueError(f"point {point.name}: train.py rejected its arguments (message above)") from None


def select_points(points: list[Point], only: list[str]) -> list[Point]:
    """The points whose names hold every grid key given in `only` (`key=label`, as the points are named) with one of
    the labels given for it: repeating a key widens the choice (`seed=1`, `seed=2`), different keys narrow it.

    Raises:
        ValueError: an entry without `=`, or a key or label that no point has (naming the labels there are).
    """
    if not only:
        return points
    labels = [point.labels for point in points]
    wanted: dict[str, set[str]] = {}
    for entry in only:
        key, sep, value = entry.partition("=")
        if not sep or not key or not value:
            raise ValueError(f"argument --only: {entry!r} is not KEY=LABEL (a grid key and a label of a point name)")
        there = sorted({names[key] for names in labels if key in names})
        if not there:
            keys = sorted({key for names in labels for key in names})
            there_are = f"the points' keys are {', '.join(keys)}" if keys else "the spec has no grid"
            raise ValueError(f"argument --only: no grid key {key!r}; {there_are}")
        if value not in there:
            raise ValueError(f"argument --only: no point has {key}={value}; {key} is one of {', '.join(there)}")
        wanted.setdefault(key, set()).add(value)
    return [p for p, names in zip(points, labels) if all(names[k] in v for k, v in wanted.items())]


def point_state(run_dir: Path, settings: dict | None = None) -> str:
    """`finished` (metrics.json and model/), `resume` (a completed checkpoint), `restart` (started, no checkpoint) or
    `new`; `changed` where a finished or resumable run's saved settings differ from `settings` (:func:`saved_changes`),
    or `extend` where the only difference is a longer run (:func:`lengthens`) and a checkpoint is there to go on from.

    A `metrics.json` that does not parse as a JSON object is not a finished run, and neither is one without `model/`
    beside a checkpoint: a run killed while exporting its model resumes, which exports it (`finish_run`).
    """
    checkpoint = latest_checkpoint(run_dir)
    finished = metrics_file_is_whole(run_dir) and ((run_dir / "model").is_dir() or checkpoint is None)
    if finished or checkpoint is not None:
        changes = saved_changes(run_dir, settings) if settings is not None else {}
        if changes:
            return "extend" if checkpoint is not None and lengthens(changes) else "changed"
        return "finished" if finished else "resume"
    return "restart" if run_dir.is_dir() and any(run_dir.iterdir()) else "new"


EXTENDABLE: tuple[str, ...] = ("max_steps", "epochs")
"""Settings a finished or interrupted point may grow: it continues from its last checkpoint (`train.py --resume
--allow-changed-settings`, whose schedule is recomputed for the new length without warming up again)."""


def lengthens(changes: dict) -> bool:
    """Whether `changes` (field -> `(saved, now)`) only make the run longer: more `max_steps` or `epochs`, with the
    other of the two unchanged."""
    return bool(changes) and set(changes) <= set(EXTENDABLE) and all(
        isinstance(old, (int, float)) and isinstance(new, (int, float)) and new > old for old, new in changes.values()
    )


def metrics_file_is_whole(run_dir: Path) -> bool:
    """Whether `run_dir/metrics.json` parses as a JSON object (a garbled one is what a crash of another tool, or a
    full disk outside hf_icl's atomic writes, leaves)."""
    try:
        return isinstance(json.loads((run_dir / "metrics.json").read_text(encoding="utf-8")), dict)
    except (OSError, UnicodeDecodeError, ValueError):
        return False


def saved_changes(run_dir: Path, settings: dict) -> dict:
    """Field -> `(saved, now)` for every training setting of the run in `run_dir` (its marker, else its
    `metrics.json`) that differs from `settings`; `{}` when the folder records none."""
    saved = saved_run_config(run_dir) or saved_run_config(run_dir, "metrics.json")
    return setting_differences(saved, settings) if saved else {}


def describe_changes(changes: dict) -> str:
    return "; ".join(f"{name}: saved {old!r}, now {new!r}" for name, (old, new) in sorted(changes.items()))


def changed_points_message(points: list[Point]) -> str:
    """One line naming every changed point and its differences."""
    listed = [
        f"{p.name} ({describe_changes(saved_changes(Path(p.arguments['output_dir']), p.settings))})" for p in points
    ]
    counted = "1 point was" if len(points) == 1 else f"{len(points)} points were"
    return (
        f"argument spec: {counted} run with other settings than the spec gives them now: "
        f"{', '.join(listed)}; pass --rerun-changed to train them again from scratch (their results are replaced), "
        "or restore the spec"
    )


def point_command(spec: SweepSpec, point: Point) -> list[str]:
    """The command that trains `point` from where its run folder stands."""
    config = Path(spec.output_root) / f"{point.name}.yaml"
    state = point_state(Path(point.arguments["output_dir"]), point.settings)
    flag = {"resume": ["--resume"], "restart": ["--overwrite"], "changed": ["--overwrite"],
            "extend": ["--resume", "--allow-changed-settings"]}.get(state, [])  # fmt: skip
    entry = ["accelerate", "launch", *map(str, spec.accelerate), "-m"] if spec.accelerate else [sys.executable, "-m"]
    return [*entry, "hf_icl.train", "--config", str(config), "--output-dir", point.arguments["output_dir"], *flag]


def run_point(spec: SweepSpec, point: Point) -> dict:
    """Train one point (skipping a finished one, or one another sweep process holds); returns `{name, status,
    returncode, seconds}`. Any launcher."""
    root = Path(spec.output_root)
    if point_state(Path(point.arguments["output_dir"]), point.settings) == "finished":
        return {"name": point.name, "status": "finished before", "returncode": 0, "seconds": 0.0}
    root.mkdir(parents=True, exist_ok=True)
    lock = root / f"{point.name}.lock"
    with claimed(lock) as held:
        if not held:
            status = f"skipped: another sweep process is training it (its lock: {lock})"
            return {"name": point.name, "status": status, "returncode": 0, "seconds": 0.0}
        if point_state(Path(point.arguments["output_dir"]), point.settings) == "finished":  # finished meanwhile
            return {"name": point.name, "status": "finished before", "returncode": 0, "seconds": 0.0}
        return train_point(spec, point)


def train_point(spec: SweepSpec, point: Point) -> dict:
    """Run the point's training process (the caller holds its lock); its arguments and log go beside its folder."""
    root = Path(spec.output_root)
    arguments = {k: v for k, v in point.arguments.items() if k != "output_dir"}
    (root / f"{point.name}.yaml").write_text(yaml.safe_dump(arguments, sort_keys=False))
    command = point_command(spec, point)
    started = time.time()
    with open(root / f"{point.name}.log", "a") as log:
        log.write(f"\n$ {' '.join(command)}\n")
        log.flush()
        returncode = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, env=os.environ.copy()).returncode
    status = "trained" if returncode == 0 else f"failed (see {root / point.name}.log)"
    return {"name": point.name, "status": status, "returncode": returncode, "seconds": round(time.time() - started)}


def optional_module(name: str, launcher: str):
    try:
        return __import__(name)
    except ImportError:
        raise SystemExit(
            f"--launcher {launcher} needs the {name} package: pip install 'hf-icl[sweep]' (or pip install {name})"
        ) from None


def run_with_ray(spec: SweepSpec, points: list[Point]) -> list[dict]:
    """One Ray task per point (`launcher.ray`: `address` for ray.init, `num_cpus`/`num_gpus` per point)."""
    ray = optional_module("ray", "ray")
    options = dict(spec.launcher.get("ray") or {})
    ray.init(address=options.pop("address", None), ignore_reinit_error=True)
    task = ray.remote(num_cpus=options.pop("num_cpus", 1), num_gpus=options.pop("num_gpus", 0), **options)(run_point)
    return ray.get([task.remote(spec, point) for point in points])


def run_with_submitit(spec: SweepSpec, points: list[Point]) -> list[dict]:
    """One job per point in a submitit job array (`launcher.submitit`: `cluster` plus submitit's parameters)."""
    submitit = optional_module("submitit", "submitit")
    options = dict(spec.launcher.get("submitit") or {})
    folder = Path(spec.output_root) / ".submitit" / "%j"
    executor = submitit.AutoExecutor(folder=str(folder), cluster=options.pop("cluster", None))
    executor.update_parameters(**options)
    jobs = executor.map_array(run_point, [spec] * len(points), points)
    return [job.result() for job in jobs]


def run_locally(spec: SweepSpec, points: list[Point], jobs: int) -> list[dict]:
    """The points on this machine, `jobs` processes at a time; prints each point's start and end."""

    def run(numbered: tuple[int, Point]) -> dict:
        i, point = numbered
        print(f"[{i + 1}/{len(points)}] {point.name}", flush=True)
        result = run_point(spec, point)
        print(f"    {point.name}: {result['status']} ({result['seconds']} s)", flush=True)
        return result

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(run, enumerate(points)))


def available_cores() -> int:
    """The cores this process may run on (its affinity where the OS reports one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def point_threads(point: Point) -> int:
    """The threads a point's process computes with: its `threads`, else `OMP_NUM_THREADS` (which it inherits), else
    every core (PyTorch's default)."""
    return point.settings.get("threads") or int(os.environ.get("OMP_NUM_THREADS") or 0) or available_cores()


def check_cores(points: list[Point], jobs: int) -> None:
    """Refuses running `jobs` of `points` at a time when their threads add up to more than this machine's cores:
    oversubscribed threads slow every run several-fold and count their spin-waiting as CPU time, which budgets and
    cost tables read."""
    if jobs < 2 or len(points) < 2:
        return
    cores = available_cores()
    busiest = sorted((point_threads(p) for p in points), reverse=True)[:jobs]
    if sum(busiest) > cores:
        fits = max(1, cores // busiest[0])
        raise ValueError(
            f"argument --jobs: jobs={jobs} runs {len(busiest)} points at a time on {' + '.join(map(str, busiest))} "
            f"threads, more than this machine's {cores} cores (oversubscribed threads slow every run several-fold); "
            f"pass --jobs {fits}, or set threads: 1 in the spec's base"
        )


def run_sweep(
    spec: SweepSpec, launcher: str = "local", jobs: int = 1, rerun_changed: bool = False, only: list[str] = ()
) -> list[dict]:
    """Check every point, then train the unfinished ones with `launcher` (`jobs` at a time when local).

    Args:
        rerun_changed: train the `changed` points again from scratch (else they are refused).
        only: `key=label` entries that pick some of the points (:func:`select_points`); the others are left alone.

    Returns:
        One result per point.

    Raises:
        ValueError: changed points without `rerun_changed`, naming them and their differences; more threads at a
            time than the machine has cores (:func:`check_cores`).
    """
    points = select_points(expand(spec), list(only))
    check_points(points)
    states = {p.name: point_state(Path(p.arguments["output_dir"]), p.settings) for p in points}
    changed = [p for p in points if states[p.name] == "changed"]
    if changed and not rerun_changed:
        raise ValueError(changed_points_message(changed))
    pending = [p for p in points if states[p.name] != "finished"]
    if launcher == "local":
        check_cores(pending, jobs)
    for point in points:
        lock = Path(spec.output_root) / f"{point.name}.lock"
        if states[point.name] == "finished" and lock.exists():  # a sweep killed as the point finished left it
            with claimed(lock):  # taken over from its dead holder and removed (a live holder's is left alone)
                pass
    results = {p.name: {"name": p.name, "status": "finished before", "returncode": 0, "seconds": 0.0} for p in points}
    if launcher == "ray":
        done = run_with_ray(spec, pending)
    elif launcher == "submitit":
        done = run_with_submitit(spec, pending)
    else:
        done = run_locally(spec, pending, jobs)
    results.update({r["name"]: r for r in done})
    return [results[p.name] for p in points]


def dry_run(spec: SweepSpec, only: list[str] = ()) -> int:
    """Print every point (or those `only` picks), its state and its command; train nothing. The points are checked
    without the plug-ins named (`--import`, `imports:`, `HF_ICL_PLUGINS`, entry points); only when a point does not
    parse without them (it names a plug-in's task or architecture) are they imported and the points checked again."""
    points = select_points(expand(spec), list(only))
    with describing():
        try:
            check_points(points)
        except ValueError:
            if not has_pending():
                raise
            load_pending()
            check_points(points)
    for point in points:
        state = point_state(Path(point.arguments["output_dir"]), point.settings)
        if state in ("changed", "extend"):
            state += ": " + describe_changes(saved_changes(Path(point.arguments["output_dir"]), point.settings))
        print(f"{point.name}  [{state}]\n    {' '.join(point_command(spec, point))}")
    print("1 point" if len(points) == 1 else f"{len(points)} points")
    return 0


def run_search_command(spec: SweepSpec, args) -> int:
    """A spec with `search:` (`training.search`): its trials, one at a time in this process (a second process on
    the same spec adds a worker); `--dry-run` prints the base point's command and the space."""
    from .training.search import Search, base_point

    if args.launcher != "local" or args.jobs != 1:
        raise ValueError("argument --launcher/--jobs: a search runs its trials locally, one per sweep process; start "
                         "another `python -m hf_icl.sweep SPEC` process (or machine) to add a worker")  # fmt: skip
    if args.dry_run:
        point = base_point(spec, sys.modules[__name__])
        check_points([point])
        print(f"search: {spec.search['trials']} trials of {json.dumps(spec.search['space'])}")
        print(f"base point:\n    {' '.join(point_command(spec, point))}")
        return 0
    results = Search(spec, sys.modules[__name__]).run()
    print(f"\ntrials: {spec.output_root}/trials.md; selected setting: {spec.output_root}/best.yaml")
    return 1 if any(r["returncode"] for r in results) else 0


def build_parser() -> CommandLineParser:
    parser = CommandLineParser(prog="python -m hf_icl.sweep", description=__doc__.split("\n\n")[0])
    parser.add_argument("spec", help="SPEC.yaml (see the module docstring)")
    parser.add_argument("--launcher", choices=LAUNCHERS, default="local", help="where the points run")
    parser.add_argument("--jobs", type=int, default=1, help="local launcher: points trained at the same time")
    parser.add_argument("--dry-run", action="store_true", help="print every point and its command, run nothing")
    parser.add_argument(
        "--rerun-changed",
        action="store_true",
        help="train again from scratch the points whose saved settings differ from the spec's (else refused)",
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="KEY=LABEL",
        help="run only the points named with KEY=LABEL (as in their names, e.g. seed=1 or variant=gla), repeatable: "
        "the labels given for one key add up, different keys must all match",
    )
    add_import_argument(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run a sweep. Plug-ins given with `--import` are imported here (the spec's points may name their
    architectures and tasks) and added to every point's `imports`, so each point's process imports them too.
    `--dry-run` imports plug-ins only when a point does not parse without them (:func:`dry_run`)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        preload(argv, describe_only=args.dry_run or None)
    except ValueError as err:
        parser.fail(err)
    try:
        check_limits(args, SWEEP_LIMITS)
        if args.jobs > 1 and args.launcher != "local":
            raise ValueError(
                f"argument --jobs: only the local launcher runs jobs={args.jobs} at a time; "
                f"{args.launcher} schedules its own"
            )
        with naming("spec"):
            spec = load_spec(args.spec)
        if args.imports:  # a file or folder is passed on as an absolute path: points may run elsewhere
            given = [str(Path(m).resolve()) if Path(m).exists() and not m.isidentifier() else m for m in args.imports]
            spec.base["imports"] = list(dict.fromkeys([*spec.base.get("imports", []), *given]))
        if spec.search is not None:
            if args.only:
                raise ValueError("argument --only: a search (`search:`) has no grid of named points to pick from")
            return run_search_command(spec, args)
        if args.dry_run:
            return dry_run(spec, args.only)
        results = run_sweep(spec, args.launcher, args.jobs, args.rerun_changed, args.only)
    except (ValueError, OSError) as err:
        parser.fail(err)
    print("\n| point | status | seconds |\n|---|---|---|")
    for result in results:
        print(f"| {result['name']} | {result['status']} | {result['seconds']} |")
    print(f"\nreport: python -m hf_icl.report {spec.output_root} --output {spec.output_root}/report")
    return 1 if any(r["returncode"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
else:
    from .utils.callable_modules import callable_module

    callable_module(__name__, "hf_icl.api:sweep")  # `hf_icl.sweep(spec, ...)`: the Python API (hf_icl.api)
