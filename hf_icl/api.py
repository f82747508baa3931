"""The Python API, mirroring the commands: `hf_icl.train(**options)`, `hf_icl.evaluate(checkpoint, task, ...)`,
`hf_icl.sweep(spec, ...)`.

Each keyword is the command's option under its `RunArguments` (or parser) name (`max_steps=5` is `--max-steps 5`;
`overrides={"hidden_size": 32}` is `--override hidden_size=32`), turned into the command line the command parses,
so a call is checked exactly as the command is and a bad value raises `ValueError` with the command's one line.
The names `train`, `evaluate` and `sweep` are also the modules of `python -m hf_icl.<name>`; those modules are
callable (:mod:`hf_icl.utils.callable_modules`), so `hf_icl.train(...)` works however they were imported.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import yaml


@dataclasses.dataclass
class Run:
    """A finished training run.

    Args:
        output_dir: its run folder.
        metrics: what it wrote to `metrics.json` (`run_config`, `train`, the test results, ...).
    """

    output_dir: Path
    metrics: dict

    @classmethod
    def from_dir(cls, output_dir: str | Path) -> Run:
        """The run in `output_dir` (read from its `metrics.json`)."""
        folder = Path(output_dir)
        if not (folder / "metrics.json").is_file():
            raise ValueError(f"output_dir={str(folder)!r} holds no metrics.json (not a finished run)")
        return cls(folder, json.loads((folder / "metrics.json").read_text(encoding="utf-8")))

    @property
    def checkpoint(self) -> Path:
        """The saved model folder (`save_pretrained` layout, with the tokenizer of token tasks)."""
        return self.output_dir / "model"

    def model(self):
        """The trained model, loaded with the head its task uses (causal LM or in-context regression)."""
        from .architectures.heads import load_model
        from .tasks import family_of

        return load_model(family_of(self.metrics["run_config"]["task"]).head, self.checkpoint)

    def tokenizer(self):
        """The run's tokenizer (token tasks)."""
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(self.checkpoint)


def train(**options) -> Run:
    """Train and evaluate one model, as `train.py` with the same options.

    Args:
        **options: `RunArguments` fields (`train.py --help`), e.g. `task="mqar", architecture="mamba",
            preset="tiny", max_steps=5, output_dir="runs/m", overrides={...}, task_options={...}`. A field without
            a flag (`keep_checkpoints`) or set to `None` is passed in a `--config` file.

    Returns:
        The finished :class:`Run`.

    Raises:
        ValueError: an unknown option or a bad value, with `train.py`'s one-line message.
    """
    from .training import main
    from .training.arguments import RunArguments, build_parser

    known = {field.name for field in dataclasses.fields(RunArguments)}
    unknown = sorted(set(options) - known - {"config"})
    if unknown:
        raise ValueError(f"train(): option {unknown[0]!r} is not one of: {', '.join(sorted(known | {'config'}))}")
    aliases = {"overrides": "override", "task_options": "task_option", "aux_loss_weights": "aux_loss_weight"}
    argv, rest = command_line(build_parser(), options, aliases)
    with tempfile.TemporaryDirectory() as folder:
        if rest:
            if "config" in options:
                raise ValueError(f"train(): {', '.join(sorted(rest))} cannot be given beside config= (put them in it)")
            config = Path(folder) / "options.yaml"
            config.write_text(yaml.safe_dump(rest), encoding="utf-8")
            argv += ["--config", str(config)]
        metrics = run_command(main, argv, "train")
    config = {key: value for key, value in metrics["run_config"].items() if key in known}
    return Run(RunArguments(**config).resolved_output_dir(), metrics)


def evaluate(checkpoint: str | Path, task: str, **options) -> dict:
    """Score a saved checkpoint, as `python -m hf_icl.evaluate` with the same options.

    Args:
        checkpoint: a `save_pretrained` folder (a run's `model/`, or `Run.checkpoint`).
        task: the task to score it on.
        **options: the command's options (`split`, `n_train`, `task_seed`, `task_option={...}`, `max_rows`,
            `batch_size`, `output_dir`, `overwrite`, `imports`).

    Returns:
        The metrics it wrote to `metrics.json`.

    Raises:
        ValueError: an unknown option or a bad value, with the command's one-line message.
    """
    from .evaluation.__main__ import build_parser, main

    argv, rest = command_line(build_parser(), {"checkpoint": str(checkpoint), "task": task, **options})
    if rest:
        raise ValueError(f"evaluate(): {', '.join(sorted(rest))} cannot be None")
    return run_command(main, argv, "evaluate")


def sweep(spec: str | Path | dict, launcher: str = "local", jobs: int = 1, rerun_changed: bool = False,
          imports: list[str] | None = None, only: list[str] | None = None) -> list[dict]:  # fmt: skip
    """Train a grid of runs, as `python -m hf_icl.sweep` (finished points are skipped, interrupted ones resumed).

    Args:
        spec: a SPEC.yaml path, or the same keys as a mapping (`output_root`, `config`, `base`, `grid`,
            `accelerate`, `launcher`; docs/guide.md).
        launcher: `local`, `ray` or `submitit`.
        jobs: local launcher: points trained at the same time.
        rerun_changed: train again from scratch the points whose saved settings differ from the spec's.
        imports: plug-in modules every point imports (`--import`).
        only: `key=label` entries that pick some points (`--only`, e.g. `["seed=1", "seed=2"]`).

    Returns:
        One result per point (per picked point with `only`): `name`, `status`, `returncode`, `seconds` and its
        `output_dir`.

    Raises:
        ValueError: a bad spec or option, with the command's one-line message.
    """
    from . import sweep as sweeps
    from .plugins import import_plugins
    from .utils.validation import check_limits, naming

    check_limits(argparse.Namespace(jobs=jobs), sweeps.SWEEP_LIMITS)
    with naming("--launcher"):
        from .modeling.configuration import check_choice

        check_choice("launcher", launcher, sweeps.LAUNCHERS)
    with tempfile.TemporaryDirectory() as folder:
        path = spec
        if isinstance(spec, dict):
            path = Path(folder) / "spec.yaml"
            path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
        with naming("spec"):
            loaded = sweeps.load_spec(path)
    if imports:
        import_plugins(list(imports))
        loaded.base["imports"] = list(dict.fromkeys([*loaded.base.get("imports", []), *imports]))
    results = sweeps.run_sweep(loaded, launcher, jobs, rerun_changed, only or [])
    return [{**result, "output_dir": str(Path(loaded.output_root) / result["name"])} for result in results]


def command_line(parser: argparse.ArgumentParser, options: dict, aliases: dict | None = None):
    """`options` as the command line `parser` reads, and the options it has no flag for (or that are `None`).

    Args:
        parser: the command's parser.
        options: option name -> value; dicts become repeated `KEY=VALUE` (JSON values), lists repeated flags.
        aliases: option name -> parser destination, where they differ (`overrides` -> `override`).

    Returns:
        `(argv, rest)`: rest maps the options left out to their values.
    """
    actions = {action.dest: action for action in parser._actions if action.dest != "help"}
    argv, rest = [], {}
    for name, value in options.items():
        action = actions.get((aliases or {}).get(name, name))
        if action is None or value is None:
            rest[name] = value
            continue
        flag = action.option_strings[0] if action.option_strings else None
        if flag is None:  # a positional argument
            argv.append(str(value))
        elif isinstance(action, argparse.BooleanOptionalAction):
            argv.append(flag if value else "--no-" + flag.removeprefix("--"))
        elif action.nargs == 0:  # store_true
            argv += [flag] if value else []
        elif isinstance(value, dict):
            for key, item in value.items():
                argv += [flag, f"{key}={json.dumps(item)}"]
        elif isinstance(value, (list, tuple)):
            for item in value:
                argv += [flag, item if isinstance(item, str) else json.dumps(item)]
        else:
            argv += [flag, str(value)]
    return argv, rest


class _Tee:
    """A stream writing to `stream` and keeping what was written (the command's error line)."""

    def __init__(self, stream):
        self.stream, self.lines = stream, []

    def write(self, text: str) -> int:
        self.lines.append(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()

    def __getattr__(self, name):
        return getattr(self.stream, name)


def run_command(main: Callable, argv: list[str], name: str):
    """`main(argv)`; its usage errors (exit status 2, one line) raise `ValueError` with that line.

    Raises:
        ValueError: the command refused its arguments.
        RuntimeError: it exited with another status.
    """
    tee = _Tee(sys.stderr)
    try:
        with contextlib.redirect_stderr(tee):
            return main(argv)
    except SystemExit as stop:
        lines = [line for line in "".join(tee.lines).splitlines() if ": error: " in line]
        if stop.code == 2 and lines:
            raise ValueError(lines[-1].split(": error: ", 1)[1]) from None
        raise RuntimeError(f"{name}() stopped with exit status {stop.code}") from None
