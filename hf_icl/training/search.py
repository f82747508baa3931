"""Hyperparameter search for `python -m hf_icl.sweep`: a sweep spec with `search:` instead of `grid:` (optuna).

    output_root: outputs/sweeps/zoo-search-gla
    config: experiments/configs/regbench_cpu.yaml
    base: {architecture: gla, max_steps: 1200, eval_every: 200, threads: 1}
    search:
      engine: optuna            # TPE sampler (seeded) over `space`, trials in <output_root>/search.journal
      trials: 12                # the budget: finished trials (complete or pruned), written before any result
      objective: accuracy       # a number the periodic validation reports (`eval_every`), e.g. accuracy, tvd
      direction: maximize       # or minimize
      seed: 0
      pruner: {kind: successive_halving, min_resource: 400, reduction_factor: 3}
      space:
        lr: {low: 3.0e-4, high: 1.0e-2, log: true}      # a float (`log`), or an int with `step`
        weight_decay: {choices: [0.0, 0.1]}
        variant:                                          # named bundles of keys, one per trial
          L4-d64: {override.num_hidden_layers: 4}
          L2-d96: {override.num_hidden_layers: 2, override.hidden_size: 96, override.intermediate_size: 384}

Keys of `space` are the grid's keys (run arguments, `override.<field>`, `shared_override.<field>`,
`task_option.<field>`, block-feature fields) or `variant`. Each trial is one training run, `<output_root>/trial-NNN`,
trained as a sweep point (its own process, its arguments in `trial-NNN.yaml`, its log in `trial-NNN.log`). While
it trains, the search reads its validation records (`training.progress`: `validation_history.jsonl`) and reports
each to optuna at its step; when the pruner says so it writes the run's `STOP` file, and the run ends as a finished
one at its next step (`train.stopped_by = "stop_requested"`). A trial's value is the objective at its last
validation, so `max_steps` must be a multiple of `eval_every`.

Pruners (`pruner.kind`): `successive_halving` (optuna's `SuccessiveHalvingPruner`: `min_resource`,
`reduction_factor`, `min_early_stopping_rate`), `hyperband` (`min_resource`, `max_resource`, `reduction_factor`),
`median` (`n_startup_trials`, `n_warmup_steps`), `threshold` (`lower`, `upper`, `n_warmup_steps`) or `none`.

The study lives in `<output_root>/search.journal` (optuna's file journal), so a killed search continues where it
stopped: rerunning it resumes the trial whose run was cut (from its checkpoint) and asks for new trials until the
budget is spent; several sweep processes on one spec share the study. At the end (and after every trial) the search
writes `trials.md` and `trials.json` (every trial: state, setting, steps reached, last validation numbers, training
CPU seconds) and `best.yaml`, the selected trial's run arguments: a file `train.py --config` reads.
`pip install 'hf-icl[search]'` installs optuna.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

from ..utils.atomic_files import write_text_atomic
from ..utils.run_locks import claimed
from .progress import ended_on_stop_request, read_validation, request_stop

ENGINES = ("optuna",)
DIRECTIONS = ("maximize", "minimize")
PRUNERS = {
    "successive_halving": ("min_resource", "reduction_factor", "min_early_stopping_rate"),
    "hyperband": ("min_resource", "max_resource", "reduction_factor"),
    "median": ("n_startup_trials", "n_warmup_steps"),
    "threshold": ("lower", "upper", "n_warmup_steps"),
    "none": (),
}
SEARCH_KEYS = ("engine", "trials", "objective", "direction", "seed", "pruner", "space")
POLL_SECONDS = 2.0


@dataclass
class SearchSpec:
    """The `search:` section of a sweep spec (see the module docstring)."""

    trials: int
    objective: str
    direction: str = "maximize"
    engine: str = "optuna"
    seed: int = 0
    pruner: dict = field(default_factory=lambda: {"kind": "none"})
    space: dict = field(default_factory=dict)


def parse_search(raw, check_key) -> SearchSpec:
    """Check a spec's `search:` mapping; errors name `search.<key>`, the value and what is allowed.

    Args:
        raw: the mapping as read from the spec.
        check_key: the sweep's key check (`sweep.check_key`), applied to every key of `space`.
    """
    if not isinstance(raw, dict):
        raise ValueError(f"search={raw!r} must be a mapping of: {', '.join(SEARCH_KEYS)}")
    unknown = sorted(set(raw) - set(SEARCH_KEYS))
    if unknown:
        raise ValueError(f"search.{unknown[0]} is not one of: {', '.join(SEARCH_KEYS)}")
    for key in ("trials", "objective", "space"):
        if key not in raw:
            raise ValueError(f"search.{key} is missing (the search needs: trials, objective, space)")
    if raw.get("engine", "optuna") not in ENGINES:
        raise ValueError(f"search.engine={raw['engine']!r} is not one of: {', '.join(ENGINES)}")
    if not isinstance(raw["trials"], int) or isinstance(raw["trials"], bool) or raw["trials"] < 1:
        raise ValueError(f"search.trials={raw['trials']!r} must be an integer ≥ 1 (the trial budget)")
    if not isinstance(raw["objective"], str) or not raw["objective"]:
        raise ValueError(f"search.objective={raw['objective']!r} must name a validation number, e.g. accuracy")
    if raw.get("direction", "maximize") not in DIRECTIONS:
        raise ValueError(f"search.direction={raw['direction']!r} is not one of: {', '.join(DIRECTIONS)}")
    if not isinstance(raw.get("seed", 0), int):
        raise ValueError(f"search.seed={raw['seed']!r} must be an integer")
    pruner = raw.get("pruner", {"kind": "none"})
    if not isinstance(pruner, dict) or pruner.get("kind") not in PRUNERS:
        raise ValueError(f"search.pruner={pruner!r} must be a mapping whose kind is one of: {', '.join(PRUNERS)}")
    extra = sorted(set(pruner) - {"kind", *PRUNERS[pruner["kind"]]})
    if extra:
        allowed = ", ".join(PRUNERS[pruner["kind"]]) or "none"
        raise ValueError(f"search.pruner.{extra[0]} is not a setting of the {pruner['kind']} pruner: {allowed}")
    space = raw["space"]
    if not isinstance(space, dict) or not space:
        raise ValueError(f"search.space={space!r} must be a non-empty mapping of key: distribution")
    for key, distribution in space.items():
        check_distribution(key, distribution, check_key)
    return SearchSpec(**raw)


def check_distribution(key: str, distribution, check_key) -> None:
    """`{low, high[, log][, step]}` (float, or int where both bounds are integers), `{choices: [...]}`, or for
    `variant` a mapping of label: {key: value}."""
    where = f"search.space.{key}"
    if key == "variant":
        if not isinstance(distribution, dict) or not distribution:
            raise ValueError(f"{where} must be a mapping of label: {{key: value, ...}}")
        for label, keys in distribution.items():
            if not isinstance(keys, dict):
                raise ValueError(f"{where}.{label}={keys!r} must be a mapping of run arguments (key: value)")
            for inner in keys:
                check_key(inner)
        return
    check_key(key)
    if not isinstance(distribution, dict):
        raise ValueError(f"{where}={distribution!r} must be {{low, high[, log][, step]}} or {{choices: [...]}}")
    if "choices" in distribution:
        if set(distribution) != {"choices"} or not isinstance(distribution["choices"], list):
            raise ValueError(f"{where}={distribution!r}: a categorical is {{choices: [value, ...]}} alone")
        if not distribution["choices"]:
            raise ValueError(f"{where}.choices is empty")
        return
    unknown = sorted(set(distribution) - {"low", "high", "log", "step"})
    if unknown or "low" not in distribution or "high" not in distribution:
        raise ValueError(f"{where}={distribution!r} must have low and high (and optionally log, step), nothing else")
    low, high = distribution["low"], distribution["high"]
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, high)) or low >= high:
        raise ValueError(f"{where}: low={low!r} and high={high!r} must be numbers with low < high")
    if distribution.get("log") and low <= 0:
        raise ValueError(f"{where}: log=true needs low > 0 (got {low!r})")


def optuna_module():
    try:
        import optuna
    except ImportError:
        raise SystemExit(
            "search: needs the optuna package: pip install 'hf-icl[search]' (or pip install optuna)"
        ) from None
    return optuna


def build_pruner(optuna, settings: dict):
    kind, options = settings["kind"], {k: v for k, v in settings.items() if k != "kind"}
    return {
        "successive_halving": lambda: optuna.pruners.SuccessiveHalvingPruner(**options),
        "hyperband": lambda: optuna.pruners.HyperbandPruner(**options),
        "median": lambda: optuna.pruners.MedianPruner(**options),
        "threshold": lambda: optuna.pruners.ThresholdPruner(**options),
        "none": lambda: optuna.pruners.NopPruner(),
    }[kind]()


def suggest(trial, search: SearchSpec) -> dict:
    """One trial's setting: `space` key -> the value optuna suggests (a variant's label for `variant`)."""
    setting = {}
    for key, distribution in search.space.items():
        if key == "variant":
            setting[key] = trial.suggest_categorical(key, list(distribution))
        elif "choices" in distribution:
            setting[key] = trial.suggest_categorical(key, distribution["choices"])
        elif all(isinstance(distribution[b], int) for b in ("low", "high")) and not distribution.get("log"):
            setting[key] = trial.suggest_int(
                key, distribution["low"], distribution["high"], step=distribution.get("step", 1)
            )
        else:
            step = distribution.get("step")
            setting[key] = trial.suggest_float(
                key,
                float(distribution["low"]),
                float(distribution["high"]),
                log=bool(distribution.get("log")),
                step=step,
            )
    return setting


class Search:
    """A running search: the spec, its study, and how a trial becomes a sweep point.

    Args:
        spec: the sweep spec (`sweep.SweepSpec`) whose `search` is set.
        sweep: the `hf_icl.sweep` module, whose point machinery trains the trials (passed in: it imports this
            module, not the other way round).
    """

    def __init__(self, spec, sweep):
        self.sweep, self.spec = sweep, spec
        self.search = parse_search(spec.search, sweep.check_key)
        self.root = Path(spec.output_root)
        base = self.point({}, "check")
        sweep.check_points([base])
        eval_every, max_steps = base.settings.get("eval_every"), base.settings.get("max_steps")
        if not eval_every or not max_steps or max_steps % eval_every:
            raise ValueError(
                f"search: base needs eval_every (the validation the trials report) and max_steps a multiple of it "
                f"(got eval_every={eval_every!r}, max_steps={max_steps!r}), so every trial is scored at its last step"
            )
        self.root.mkdir(parents=True, exist_ok=True)
        self.optuna = optuna = optuna_module()
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        storage = optuna.storages.JournalStorage(
            optuna.storages.journal.JournalFileBackend(str(self.root / "search.journal"))
        )
        self.study = optuna.create_study(
            study_name=self.root.name,
            storage=storage,
            load_if_exists=True,
            direction=self.search.direction,
            sampler=trial_sampler(optuna, self.search.seed, 0),
            pruner=build_pruner(optuna, self.search.pruner),
        )

    def point(self, setting: dict, name: str):
        """The sweep point of a trial's `setting` (space key -> value), named `name`."""
        arguments = base_point(self.spec, self.sweep).arguments
        for key, value in setting.items():
            chosen = self.search.space[key][value] if key == "variant" else value
            self.sweep.assign(arguments, key, chosen)
        arguments["output_dir"] = str(self.root / name)
        return self.sweep.Point(name, arguments)

    def spent(self) -> int:
        """Trials that count against the budget: finished (complete or pruned) or running in some process."""
        TrialState = self.optuna.trial.TrialState
        return len(self.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED,
                                                                 TrialState.RUNNING)))  # fmt: skip

    def run(self) -> list[dict]:
        """Resume cut trials, then ask for new ones until `trials` have finished; returns one result per trial."""
        results = [self.run_trial(trial) for trial in self.cut_trials()]
        while self.spent() < self.search.trials:
            trial = self.study.ask()  # its number is fixed now; its parameters are drawn at `suggest`
            self.study.sampler = trial_sampler(self.optuna, self.search.seed, trial.number)
            results.append(self.run_trial(trial))
        self.write_tables()
        return results

    def cut_trials(self) -> list:
        """RUNNING trials whose run no process holds (a killed search): resumed under the same number. The list is
        read once; `run_trial` checks again, under the trial's lock, that each is still RUNNING before training it
        (another process may have resumed and ended it meanwhile)."""
        cut = []
        for frozen in self.study.get_trials(deepcopy=False, states=(self.optuna.trial.TrialState.RUNNING,)):
            with claimed(self.root / f"{trial_name(frozen.number)}.lock") as held:
                if held:
                    cut.append(self.optuna.trial.Trial(self.study, frozen._trial_id))
        return cut

    def run_trial(self, trial) -> dict:
        """Train one trial as a sweep point, reporting its validation records; tell the study how it ended."""
        name = trial_name(trial.number)
        setting = {key: trial.params[key] for key in self.search.space} if trial.params else suggest(trial, self.search)
        point = self.point(setting, name)
        self.sweep.check_points([point])
        print(f"[trial {trial.number}] {name}: {json.dumps(setting)}", flush=True)
        lock = self.root / f"{name}.lock"
        with claimed(lock) as held:
            if not held:
                return {"name": name, "status": "skipped: another process runs it", "returncode": 0, "seconds": 0.0}
            if not self.still_running(trial):  # a cut trial another process resumed and ended since it was listed
                return {"name": name, "status": "skipped: already finished", "returncode": 0, "seconds": 0.0}
            result = self.train_reporting(trial, point)
        self.write_tables()
        print(f"    {name}: {result['status']} ({result['seconds']} s)", flush=True)
        return result

    def still_running(self, trial) -> bool:
        """Whether the study still has `trial` RUNNING (read afresh from the journal, which other processes write)."""
        frozen = [t for t in self.study.get_trials(deepcopy=False) if t.number == trial.number]
        return bool(frozen) and frozen[0].state == self.optuna.trial.TrialState.RUNNING

    def reported_steps(self, trial) -> list[int]:
        """The steps whose validation value `trial` has already reported (earlier sessions of a resumed trial)."""
        frozen = [t for t in self.study.get_trials(deepcopy=False) if t.number == trial.number]
        return list(frozen[0].intermediate_values) if frozen else []

    def train_reporting(self, trial, point) -> dict:
        """The point's training process, with its validation records reported as they come and pruning by `STOP`."""
        run_dir = Path(point.arguments["output_dir"])
        state = self.sweep.point_state(run_dir, point.settings)
        TrialState = self.optuna.trial.TrialState
        if state != "finished":
            arguments = {k: v for k, v in point.arguments.items() if k != "output_dir"}
            (self.root / f"{point.name}.yaml").write_text(yaml.safe_dump(arguments, sort_keys=False))
            command = self.sweep.point_command(self.spec, point)
            started, pruned = time.time(), False
            reported = set(self.reported_steps(trial))  # a resumed trial: its earlier records are in the journal
            with open(self.root / f"{point.name}.log", "a") as log:
                log.write(f"\n$ {' '.join(command)}\n")
                log.flush()
                process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
                while True:
                    finished = process.poll() is not None
                    for record in read_validation(run_dir):
                        value = record.get(self.search.objective)
                        if record["step"] in reported or not isinstance(value, (int, float)):
                            continue
                        reported.add(record["step"])
                        trial.report(float(value), record["step"])
                        if not pruned and trial.should_prune():
                            pruned = True
                            request_stop(run_dir, f"pruned by the search at step {record['step']}")
                    if finished:
                        break
                    time.sleep(POLL_SECONDS)
            seconds = round(time.time() - started)
            if process.returncode != 0:
                self.study.tell(trial, state=TrialState.FAIL)
                return {"name": point.name, "status": f"failed (see {self.root / point.name}.log)",
                        "returncode": process.returncode, "seconds": seconds}  # fmt: skip
        else:
            seconds, pruned = 0, False
        records = [r for r in read_validation(run_dir) if isinstance(r.get(self.search.objective), (int, float))]
        pruned = pruned and ended_on_stop_request(run_dir)  # a request that came after the last step prunes nothing
        if pruned or not records:
            self.study.tell(trial, state=TrialState.PRUNED)
            return {"name": point.name, "status": "pruned", "returncode": 0, "seconds": seconds}
        self.study.tell(trial, float(records[-1][self.search.objective]))
        return {"name": point.name, "status": "complete", "returncode": 0, "seconds": seconds}

    def trial_rows(self) -> list[dict]:
        """Every trial: number, state, setting, steps reached, last validation numbers, training CPU seconds."""
        rows = []
        for frozen in self.study.get_trials(deepcopy=False):
            run_dir = self.root / trial_name(frozen.number)
            records = read_validation(run_dir)
            last = records[-1] if records else {}
            numbers = {k: v for k, v in last.items() if k not in ("step", "train_wall_s", "train_cpu_s")}
            rows.append({"trial": frozen.number, "state": frozen.state.name.lower(), "setting": frozen.params,
                         "value": frozen.value, "steps": last.get("step"), "train_cpu_s": last.get("train_cpu_s"),
                         "validation": numbers})  # fmt: skip
        return rows

    def write_tables(self) -> None:
        """`trials.json`, `trials.md` and `best.yaml` (the selected trial's run arguments) in the output root."""
        rows = self.trial_rows()
        write_text_atomic(self.root / "trials.json", json.dumps(rows, indent=1, sort_keys=True) + "\n")
        keys = sorted({k for row in rows for k in row["validation"]})
        lines = [f"| trial | state | setting | steps | {' | '.join(keys)} | train CPU s |",
                 "|" + "---|" * (5 + len(keys))]  # fmt: skip
        for row in rows:
            numbers = [f"{row['validation'][k]:.4f}" if k in row["validation"] else "—" for k in keys]
            cpu = f"{row['train_cpu_s']:.0f}" if row["train_cpu_s"] is not None else "—"
            setting = ", ".join(
                f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row["setting"].items()
            )
            lines.append(f"| {row['trial']} | {row['state']} | {setting} | {row['steps'] or '—'} | "
                         + " | ".join(numbers) + f" | {cpu} |")  # fmt: skip
        complete = [row for row in rows if row["state"] == "complete"]
        if complete:
            best = self.study.best_trial
            lines += ["", f"Selected: trial {best.number} ({self.search.objective} = {best.value:.4f}, "
                          f"{self.search.direction}d on validation): {best.params}"]  # fmt: skip
            point = self.point({k: best.params[k] for k in self.search.space}, trial_name(best.number))
            arguments = {k: v for k, v in point.arguments.items() if k != "output_dir"}
            header = f"# Selected by the search in {self.root} (trial {best.number}); train.py --config reads it.\n"
            write_text_atomic(self.root / "best.yaml", header + yaml.safe_dump(arguments, sort_keys=False))
        write_text_atomic(self.root / "trials.md", "\n".join(lines) + "\n")


def base_point(spec, sweep):
    """The point that `config` and `base` alone give (what every trial starts from), named `run`."""
    return sweep.expand(sweep.SweepSpec(spec.output_root, spec.config, dict(spec.base)))[0]


def trial_sampler(optuna, seed: int, number: int):
    """The TPE sampler that draws trial `number`'s parameters, seeded from (`seed`, `number`).

    Every sweep process on a spec shares the study but has its own sampler; one sampler seeded `seed` per process
    made two workers draw the same random start-up settings in lockstep (trials 0 and 1 identical, then 2 and 3).
    A fresh sampler per trial, seeded by the search's seed and the trial's number, draws distinct settings whatever
    the number of workers, and the same settings for the same trial numbers on a rerun (TPE reads the history from
    the study, so it keeps no state of its own between trials)."""
    entropy = np.random.SeedSequence([seed, number]).generate_state(1)[0]
    return optuna.samplers.TPESampler(seed=int(entropy))


def trial_name(number: int) -> str:
    return f"trial-{number:03d}"


def run_search(spec, sweep) -> list[dict]:
    """Run (or continue) the search of `spec` (a `sweep.SweepSpec` with `search`); one result per trial run here."""
    return Search(spec, sweep).run()
