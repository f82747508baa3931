"""Fuzz test of bad input (issue #15): every option of every command gets generated bad values.

Each command runs in-process through the entry function its script calls (`hf_icl.training.main` for
`train.py`, `hf_icl.evaluate.main`, `hf_icl.export.main` for each export). A bad value must end in status 2 and one
line on stderr that names the option, with no traceback, and every file of the output folder must still be there,
byte for byte (each base command line asks to overwrite or replace, so a value that slipped through would touch
them).

The bad values are drawn from what each option declares: the ranges of `RUN_LIMITS`/`EVALUATE_LIMITS`, the choices of
the parser, the fields of the task's builder config and of the model config; plus junk text for any typed option.
`test_every_option_has_bad_values` fails when an option is added without a way to make a bad value for it.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import tempfile
import typing
from pathlib import Path

import pytest
import yaml
from cli_entry_points import (
    EXPORTS,
    call,
    export_command,
    fake_export_folder,
    fake_run_folder,
    snapshot,
    tiny_checkpoint,
)
from huggingface_hub.utils import validate_repo_id
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hf_icl.analysis.__main__ as analysis_main
import hf_icl.evaluate
import hf_icl.report
import hf_icl.sweep
from hf_icl.analysis import slowfast
from hf_icl.architectures import ARCHITECTURES
from hf_icl.tasks import family_of, task_entry
from hf_icl.training import main as train_main
from hf_icl.training.arguments import RUN_LIMITS, RunArguments, build_parser, flag_of_field
from hf_icl.utils.validation import Limit, field_types, flag_of

WORK = Path(tempfile.mkdtemp(prefix="hf_icl_cli_fuzz_"))
A_FILE = WORK / "a_file.txt"
A_FILE.write_text("not a folder\n")
FOREIGN = WORK / "foreign"
FOREIGN.mkdir()
(FOREIGN / "thesis.tex").write_text("\\documentclass{article}\n")
MISSING = WORK / "missing"
GARBAGE_CHECKPOINT = WORK / "garbage_checkpoint"
GARBAGE_CHECKPOINT.mkdir()
(GARBAGE_CHECKPOINT / "config.json").write_text("{not json")
SCRIPTS = {name: export_command(name) for name in EXPORTS}
FUZZ = settings(  # a deeper, random search: HF_ICL_FUZZ_EXAMPLES=200 HF_ICL_FUZZ_RANDOM=1 pytest tests/test_cli_fuzz.py
    max_examples=int(os.environ.get("HF_ICL_FUZZ_EXAMPLES", "8")),
    derandomize=not os.environ.get("HF_ICL_FUZZ_RANDOM"),
    deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


JUNK = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=0, max_size=10),
    st.sampled_from(["abc", "1.5.2", "1,5", "0x10", "two\nlines", "None", "[]", "{}"]),
).filter(lambda text: not _is_number(text) and "\x00" not in text)
"""Text that is no number (an empty string, letters, control characters, a line break, ...)."""
IDENTIFIER = st.from_regex(r"[a-z][a-z_]{0,12}", fullmatch=True)


def outside(limit: Limit, *, text: bool = True) -> st.SearchStrategy[str]:
    """Values a `Limit` refuses, as command-line text: out of range, the wrong kind, NaN/infinity, junk."""
    options = [JUNK] if text else []
    if limit.low is not None:
        if limit.kind is int:
            options.append(st.integers(max_value=int(limit.low) - (0 if limit.low_open else 1)))
        else:
            options.append(st.floats(max_value=limit.low, exclude_max=not limit.low_open, allow_nan=False,
                                     allow_infinity=False))
    if limit.high is not None:
        if limit.kind is int:
            options.append(st.integers(min_value=int(limit.high) + (0 if limit.high_open else 1)))
        else:
            options.append(st.floats(min_value=limit.high, exclude_min=not limit.high_open, allow_nan=False,
                                     allow_infinity=False))
    if limit.kind is int:
        options.append(st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: not x.is_integer()))
    options.append(st.sampled_from(["nan", "inf", "-inf"]))
    return st.one_of(options).map(str)


def not_in(choices) -> st.SearchStrategy[str]:
    return JUNK.filter(lambda text: text not in set(map(str, choices)))


def explicit_argument() -> st.SearchStrategy[str]:
    """A value given to a flag that takes none (`--resume=yes`)."""
    return st.one_of(st.sampled_from(["yes", "no", "1", "0", "true"]), JUNK)


def key_values(valid_keys, bad_values: dict[str, st.SearchStrategy]) -> st.SearchStrategy[str]:
    """`FIELD=VALUE` texts that are malformed, give a known field a bad value, or (with `valid_keys`) name an
    unknown field."""
    malformed = st.one_of(JUNK.filter(lambda t: "=" not in t), JUNK.map(lambda t: "=" + t))
    known = [strategy.map(lambda value, key=key: f"{key}={value}") for key, strategy in bad_values.items()]
    if valid_keys is None:  # any name is allowed (auxiliary losses are named by the model)
        return st.one_of(malformed, *known)
    unknown = IDENTIFIER.filter(lambda k: k not in set(valid_keys)).map(lambda k: f"{k}=1")
    return st.one_of(malformed, unknown, *known)


def yaml_file(text: str) -> str:
    path = Path(tempfile.mkstemp(suffix=".yaml", dir=WORK)[1])
    path.write_text(text)
    return str(path)


def bad_config_files() -> st.SearchStrategy[str]:
    """`--config` values: a missing file, a folder, invalid YAML, a list, an unknown field, a bad type or range."""
    fields = {name: annotation for name, annotation in RunArguments.__annotations__.items()}
    numeric = sorted(RUN_LIMITS)
    out_of_range = st.sampled_from(numeric).flatmap(
        lambda name: outside(RUN_LIMITS[name], text=False).map(lambda value: {name: yaml.safe_load(value)})
    )
    wrong_type = st.sampled_from(sorted(fields)).map(lambda name: {name: {"a": [1, 2]}})
    unknown = IDENTIFIER.filter(lambda k: k not in fields).map(lambda k: {k: 1})
    return st.one_of(
        st.sampled_from([str(MISSING / "run.yaml"), str(WORK)]),
        st.sampled_from(["lr: [1, 2", "{a: 1", "- just\n- a list\n", "42\n", "'a string'\n"]).map(yaml_file),
        st.one_of(out_of_range, wrong_type, unknown).map(lambda values: yaml_file(yaml.safe_dump(values))),
    )


def bad_repo_ids() -> st.SearchStrategy[str]:
    def invalid(text):
        try:
            validate_repo_id(text)
        except ValueError:
            return True
        return False

    return st.one_of(st.sampled_from(["a/b/c", "white space", "-lead", "trail.", "x" * 97, ""]), JUNK).filter(invalid)


# ---- task options and model overrides, from their declared fields -----------------------------------------------


def bad_option_values(task: str) -> dict[str, st.SearchStrategy]:
    """A bad value for every option of a builder task: negative, non-integral, a string, a boolean; 0 for a split."""
    entry = task_entry(task)
    splits = set(entry.builder.SPLIT_SIZE_FIELDS)
    common = st.one_of(st.integers(max_value=-1), st.sampled_from(["1.5", '"abc"', "true", "null2", "[1]"]))
    return {
        field: st.one_of(common, st.just("0")) if field in splits else common
        for field in entry.option_fields
        if field not in ("n_train", "seed")
    }


def bad_task_options() -> st.SearchStrategy[str]:
    """`--task-option` values for RegBench, including the two fields that have their own flags."""
    fields = task_entry("regbench").option_fields
    return key_values(fields, bad_option_values("regbench")) | st.sampled_from(["n_train=10", "seed=1"])


MODEL_POSITIVE = ("hidden_size", "num_hidden_layers", "vocab_size", "max_position_embeddings")


def bad_overrides() -> st.SearchStrategy[str]:
    from dataclasses import fields

    known = {f.name for f in fields(ARCHITECTURES["transformer"].config_class)}
    value = st.one_of(st.integers(max_value=0), st.sampled_from(['"abc"', "1.5", "[1]"]))
    bad = {name: value for name in MODEL_POSITIVE}
    return key_values(known, bad)


def bad_shared_overrides() -> st.SearchStrategy[str]:
    """Like `bad_overrides`, for fields every architecture reads (a shared field the model does not read is left out,
    not refused; an unknown one is refused)."""
    from hf_icl.training.shared_overrides import known_fields

    value = st.one_of(st.integers(max_value=0), st.sampled_from(['"abc"', "1.5", "[1]"]))
    return key_values(known_fields(), {name: value for name in MODEL_POSITIVE})


# ---- the strategies of every option, by command ------------------------------------------------------------------


def option_strategies(parser, special: dict, limits: dict) -> dict[str, st.SearchStrategy[str]]:
    """Option (or positional argument) -> bad values: `special` ones first, then the parser's choices, flags that
    take no value, and the ranges of `limits` (dest -> `Limit`). Options none of these covers are left out, and
    `test_every_option_has_bad_values` reports them."""
    strategies = {}
    for action in parser._actions:
        if action.dest == "help":
            continue
        key = action.option_strings[0] if action.option_strings else action.dest
        if key in special:
            strategies[key] = special[key]
        elif action.choices is not None:
            strategies[key] = not_in(action.choices)
        elif action.nargs == 0:
            strategies[key] = explicit_argument()
        elif action.dest in limits:
            strategies[key] = outside(limits[action.dest])
    return strategies


def bad_plugins() -> st.SearchStrategy[str]:
    """`--import` values that cannot be imported: no such module, no such file, a missing submodule."""
    return st.sampled_from(["hf_icl_no_such_plugin", str(MISSING / "plugin.py"), "os.path.no_such_submodule"])


def train_strategies() -> dict[str, st.SearchStrategy[str]]:
    """Bad values for every option of `train.py` (from the parser and `RUN_LIMITS`)."""
    special = {
        "--config": bad_config_files(),
        "--output-dir": st.sampled_from([str(A_FILE), str(FOREIGN)]),
        "--push-to-hub": bad_repo_ids(),
        "--override": bad_overrides(),
        "--shared-override": bad_shared_overrides(),
        "--task-option": bad_task_options(),
        "--aux-loss-weight": key_values(None, {"load_balance": st.one_of(
            st.floats(max_value=0, exclude_max=True, allow_nan=False, allow_infinity=False).map(str),
            st.sampled_from(['"abc"', "NaN", "Infinity", "[1]"]),
        )}),
        "--ngram-heads": st.one_of(
            JUNK.filter(lambda t: t.strip(" ;") != ""), st.integers(min_value=2).map(lambda layer: f"{layer}:1,2")
        ),
        "--curriculum": st.one_of(JUNK, st.just("n_points=4:10:3:2")),  # regbench is a dataset: no curriculum fits
        "--task-preset": not_in(family_of("regbench").presets),
        "--preset": not_in(ARCHITECTURES["transformer"].presets),
        "--import": bad_plugins(),
    }
    parser = build_parser()
    flags = {a.dest: a.option_strings[0] for a in parser._actions if a.option_strings}
    limits = {dest: RUN_LIMITS[dest] for dest in flags if dest in RUN_LIMITS and flag_of_field(dest) == flags[dest]}
    return option_strategies(parser, special, limits)


def evaluate_strategies() -> dict[str, st.SearchStrategy[str]]:
    special = {
        "--checkpoint": st.sampled_from([str(MISSING), str(FOREIGN), str(GARBAGE_CHECKPOINT), str(A_FILE)]),
        "--output-dir": st.just(str(A_FILE)),
        "--task-option": bad_task_options(),
        "--import": bad_plugins(),
    }
    return option_strategies(hf_icl.evaluate.build_parser(), special, hf_icl.evaluate.EVALUATE_LIMITS)


def export_strategies(script) -> dict[str, st.SearchStrategy[str]]:
    """Bad values for an export: its overrides below what every builder allows (0 for a split size)."""
    export = script.EXPORT
    builders = {type(export.make_builder(name, {}, str(WORK / "cache"))) for name in export.configs}
    splits = {field for builder in builders for field in builder.SPLIT_SIZE_FIELDS}
    special = {
        "--output": st.sampled_from([str(A_FILE), str(FOREIGN)]),
        "--cache-dir": st.just(str(A_FILE)),
        "--push-to-hub": bad_repo_ids(),
    }
    for field, kind in export.overrides.items():
        low = 1 if field in splits else 0
        bad = st.integers(max_value=low - 1) if kind is int else st.floats(max_value=0, allow_nan=False,
                                                                            allow_infinity=False)
        special[flag_of(field)] = st.one_of(bad.map(str), JUNK, st.sampled_from(["nan", "inf"]))
    return option_strategies(export.parser(), special, {})


def analysis_strategies() -> dict[str, st.SearchStrategy[str]]:
    """`python -m hf_icl.analysis slowfast`: its options, and the subcommand itself."""
    folders = st.sampled_from([str(MISSING), str(FOREIGN), str(GARBAGE_CHECKPOINT / "nothing"), str(A_FILE)])
    analysis_main.discover()
    special = {"command": not_in(analysis_main.ANALYSES), "--checkpoint": folders, "--baseline": folders,
               "--output": st.just(str(A_FILE))}
    return {"command": special["command"], **option_strategies(analysis_subparser(), special, slowfast.LIMITS)}


def report_strategies() -> dict[str, st.SearchStrategy[str]]:
    special = {"runs": st.just(str(MISSING)), "--output": st.just(str(A_FILE)), "--collect": st.just(str(A_FILE)),
               "--readme": st.sampled_from([str(MISSING), str(A_FILE), str(FOREIGN)])}
    return option_strategies(hf_icl.report.build_parser(), special, {})


def sweep_strategies() -> dict[str, st.SearchStrategy[str]]:
    """`python -m hf_icl.sweep SPEC.yaml`: bad specs (missing, not YAML, not a mapping, unknown keys, a point
    `train.py` would refuse), a launcher that does not exist, a value for `--dry-run`, an `--only` that picks no
    point."""
    def spec(values) -> str:
        return yaml_file(yaml.safe_dump({"output_root": str(WORK / "sweep"), **values}))

    bad_points = st.sampled_from(sorted(RUN_LIMITS)).flatmap(
        lambda name: outside(RUN_LIMITS[name], text=False).map(lambda value: {"base": {name: yaml.safe_load(value)}})
    )
    special = {"spec": st.one_of(
        st.sampled_from([str(MISSING / "spec.yaml"), str(WORK)]),
        st.sampled_from(["grid: [1, 2", "- a\n- list\n", "42\n"]).map(yaml_file),
        st.sampled_from([{"colour": "red"}, {"grid": {"lr": []}}, {"base": {"output_dir": "x"}}, {"base": []}])
        .map(spec),
        bad_points.map(spec),
    ), "--import": bad_plugins(),
        "--only": st.sampled_from(["seed", "=1", "seed=", "seed=1", "run=run"])}  # the fuzzed spec has no grid
    return option_strategies(hf_icl.sweep.build_parser(), special, hf_icl.sweep.SWEEP_LIMITS)


# ---- the commands, their base command lines and folders ----------------------------------------------------------


def analysis_subparser():
    """The `slowfast` subcommand's parser (its options; the subcommand name is fuzzed on the main parser)."""
    subparsers = next(a for a in analysis_main.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return subparsers.choices["slowfast"]


STRATEGIES = {
    "train.py": train_strategies,
    "evaluate": evaluate_strategies,
    **{name: functools.partial(export_strategies, SCRIPTS[name]) for name in EXPORTS},
    "analysis": analysis_strategies,
    "report": report_strategies,
    "sweep": sweep_strategies,
}
COMMANDS = tuple(STRATEGIES)


@functools.cache
def strategies_of(name: str) -> dict[str, st.SearchStrategy[str]]:
    """Option -> bad values, for every option of a command."""
    return STRATEGIES[name]()


def parser_of(name: str):
    parsers = {"train.py": build_parser, "evaluate": hf_icl.evaluate.build_parser, "analysis": analysis_subparser,
               "report": hf_icl.report.build_parser, "sweep": hf_icl.sweep.build_parser}
    return parsers[name]() if name in parsers else SCRIPTS[name].EXPORT.parser()


def command(name: str):
    """`(entry function, base argv, folder whose files must survive)` of a command, its folder freshly made."""
    if name == "train.py":
        folder = fake_run_folder(WORK / "run")
        base = ["--output-dir", str(folder), "--overwrite", "--preset", "tiny", "--report-to", "none",
                "--max-steps", "2", "--n-train", "10"]
        return train_main, base, folder
    if name == "evaluate":
        folder = user_folder(WORK / "eval", {"metrics.json": '{"test": {}}'})
        base = ["--checkpoint", str(checkpoint()), "--task", "regbench", "--output-dir", str(folder), "--overwrite",
                "--max-rows", "2"]
        return hf_icl.evaluate.main, base, folder
    if name == "analysis":
        folder = user_folder(WORK / "analysis", {})
        return analysis_main.main, ["slowfast", "--checkpoint", str(checkpoint()), "--output", str(folder)], folder
    if name == "report":
        folder = user_folder(WORK / "report", {"REPORT.md": "# an earlier report\n"})
        runs = fake_run_folder(WORK / "runs" / "experiment" / "run")
        (runs / "metrics.json").write_text(json.dumps({"train": {"steps": 1}, "run_config": {"task": "regbench"}}))
        return hf_icl.report.main, [str(runs.parent.parent), "--output", str(folder)], folder
    if name == "sweep":
        folder = user_folder(WORK / "sweep", {})
        spec = yaml_file(yaml.safe_dump({"output_root": str(folder), "base": {"task": "regbench", "max_steps": 2}}))
        return hf_icl.sweep.main, [spec, "--dry-run"], folder
    script = SCRIPTS[name]
    folder = fake_export_folder(WORK / f"export_{name}", script, script.EXPORT.configs[0])
    base = ["--output", str(folder), "--replace-configs", "--cache-dir", str(WORK / "cache")]
    return script.main, base, folder


def with_bad_value(name: str, base: list[str], key: str, value: str) -> list[str]:
    """The base command line with `key` set to `value` (`--flag=value`; a positional argument replaces the base's)."""
    if key.startswith("-"):
        return [*base, f"{key}={value}"]
    if name == "report":  # one more run folder, beside the good one
        return [base[0], value, *base[1:]]
    return [value, *base[1:]]  # the analysis subcommand, the sweep's spec


def user_folder(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in {**files, "notes.txt": "my notes\n"}.items():
        (folder / name).write_text(text)
    return folder


def checkpoint() -> Path:
    folder = WORK / "checkpoint"
    if not (folder / "config.json").exists():
        tiny_checkpoint(folder)
    return folder


CASES = [(name, key) for name in COMMANDS for key in strategies_of(name)]


def test_every_numeric_run_argument_has_a_range():
    numeric = [
        name for name, annotation in field_types(RunArguments).items()
        if {int, float} & set(typing.get_args(annotation) or (annotation,))
    ]
    assert numeric and not sorted(set(numeric) - set(RUN_LIMITS)), "declare the range in RUN_LIMITS"


@pytest.mark.parametrize("name", COMMANDS)
def test_every_option_has_bad_values(name):
    actions = [a for a in parser_of(name)._actions if a.dest != "help"]
    missing = sorted({a.option_strings[0] if a.option_strings else a.dest for a in actions} - set(strategies_of(name)))
    assert not missing, f"options of {name} without a bad-value strategy: {missing}"


@pytest.mark.parametrize("name, flag", CASES, ids=[f"{n}:{f}" for n, f in CASES])
@FUZZ
@given(data=st.data())
def test_bad_value_exits_2_with_one_line_and_touches_nothing(name, flag, data):
    entry, base, folder = command(name)
    value = data.draw(strategies_of(name)[flag], label=flag)
    before = snapshot(folder)
    outcome = call(entry, with_bad_value(name, base, flag, value))
    assert outcome.escaped is None, outcome.escaped
    lines = outcome.err.strip("\n").split("\n")
    assert outcome.status == 2, (outcome.status, outcome.err[-2000:], outcome.out[-500:])
    assert len(lines) == 1, outcome.err
    named = (flag, flag.lstrip("-").replace("-", "_"))
    assert any(n.lower() in lines[0].lower() for n in named), lines[0]
    assert "Traceback" not in outcome.err
    assert snapshot(folder) == before


# ---- combinations: several options at once, on the command line and in a --config file ---------------------------

VALID_FLAGS = {
    "--lr": ["0.01", "1e-05"], "--min-lr": ["0", "1e-06"], "--epochs": ["1", "0.5"], "--max-steps": ["3"],
    "--warmup-steps": ["1"], "--warmup-ratio": ["0.05"], "--seed": ["3"], "--batch-size": ["4"],
    "--lr-schedule": ["constant", "cosine", "wsd"], "--weight-decay": ["0"], "--preset": ["tiny"],
    "--architecture": ["lstm", "gla"], "--task-option": ["n_test=4"], "--grad-clip": ["0.5"],
    "--task-preset": sorted(family_of("regbench").presets),
}  # fmt: skip
"""Valid values of some of train.py's options, some of which conflict with each other (`--epochs` and
`--max-steps`, `--warmup-steps` and `--warmup-ratio`, `--min-lr` above `--lr`)."""


def config_entries(valid: bool) -> st.SearchStrategy[dict]:
    """A `--config` file's fields: valid values of :data:`VALID_FLAGS`, or one bad field (out of range, of the wrong
    type, or unknown)."""
    if valid:
        flags = st.sampled_from(sorted(set(VALID_FLAGS) - {"--task-option"}))
        return flags.flatmap(lambda flag: st.sampled_from(VALID_FLAGS[flag]).map(
            lambda text: {build_parser_dest(flag): as_value(text)}))  # fmt: skip
    fields = {name for name in RunArguments.__annotations__}
    out_of_range = st.sampled_from(sorted(RUN_LIMITS)).flatmap(
        lambda name: outside(RUN_LIMITS[name], text=False).map(lambda value: {name: yaml.safe_load(value)})
    )
    wrong_type = st.sampled_from(sorted(fields)).map(lambda name: {name: {"a": [1, 2]}})
    unknown = IDENTIFIER.filter(lambda k: k not in fields).map(lambda k: {k: 1})
    return st.one_of(out_of_range, wrong_type, unknown)


def as_value(text: str):
    """A command-line value as a `--config` file holds it (PyYAML reads `1e-05` as text: the number is written)."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def build_parser_dest(flag: str) -> str:
    return next(a.dest for a in build_parser()._actions if flag in a.option_strings)


@st.composite
def train_combinations(draw) -> tuple[list[str], set[str]]:
    """`(argv, names)`: one to three bad values and up to three valid ones, each on the command line or in one
    `--config` file, in any order; `names` are the options the refusal may name (any option given)."""
    strategies = strategies_of("train.py")
    bad = draw(st.lists(st.sampled_from(sorted(strategies)), min_size=1, max_size=3, unique=True), label="bad")
    others = sorted(set(VALID_FLAGS) - set(bad))  # a valid value after a bad one of the same flag would replace it
    valid = draw(st.lists(st.sampled_from(others), max_size=3, unique=True), label="valid")
    options = [(flag, draw(strategies[flag], label=flag)) for flag in bad]
    options += [(flag, draw(st.sampled_from(VALID_FLAGS[flag]), label=flag)) for flag in valid]
    options = draw(st.permutations(options), label="order")
    config: dict = {}
    entries = [] if "--config" in bad else draw(st.lists(st.booleans(), min_size=3, max_size=3), label="in config")
    for in_config in entries:  # (a second --config would replace a bad one)
        if in_config:
            config.update(draw(config_entries(valid=draw(st.booleans(), label="valid entry")), label="entry"))
    argv = [f"{flag}={value}" for flag, value in options]
    if config:
        at = draw(st.integers(0, len(argv)), label="--config at")
        argv.insert(at, f"--config={yaml_file(yaml.safe_dump(config))}")
    names = {flag for flag, _ in options} | ({"--config"} if config else set())
    return argv, names


@FUZZ
@given(combination=train_combinations())
def test_bad_option_combinations_exit_2_with_one_line_and_touch_nothing(combination):
    """Several options at once, some in a --config file: any bad value (or two given options that conflict) ends in
    status 2 and one line that names an option given, before the run folder is touched."""
    argv, names = combination
    entry, base, folder = command("train.py")
    before = snapshot(folder)
    outcome = call(entry, [*base, *argv])
    assert outcome.escaped is None, outcome.escaped
    lines = outcome.err.strip("\n").split("\n")
    assert outcome.status == 2 and len(lines) == 1, (argv, outcome.status, outcome.err[-2000:])
    named = {form for flag in names for form in (flag, flag.lstrip("-").replace("-", "_"))}
    assert any(name.lower() in lines[0].lower() for name in named), (argv, lines[0])
    assert "Traceback" not in outcome.err
    assert snapshot(folder) == before


@pytest.mark.parametrize("name", COMMANDS)
@FUZZ
@given(data=st.data())
def test_two_bad_values_at_once_exit_2_naming_one(name, data):
    keys = data.draw(st.lists(st.sampled_from(sorted(strategies_of(name))), min_size=2, max_size=2, unique=True))
    entry, argv, folder = command(name)
    for key in keys:
        argv = with_bad_value(name, argv, key, data.draw(strategies_of(name)[key], label=key))
    before = snapshot(folder)
    outcome = call(entry, argv)
    assert outcome.escaped is None, outcome.escaped
    lines = outcome.err.strip("\n").split("\n")
    assert outcome.status == 2 and len(lines) == 1, (argv, outcome.status, outcome.err[-2000:])
    named = {form for key in keys for form in (key, key.lstrip("-").replace("-", "_"))}
    assert any(n.lower() in lines[0].lower() for n in named), (keys, lines[0])
    assert snapshot(folder) == before


@st.composite
def valid_layers(draw) -> tuple[dict, dict]:
    """`(config file fields, command-line fields)`: valid values of :data:`VALID_FLAGS` that do not conflict within
    one layer."""
    layers = []
    for _ in range(2):
        choices = sorted(set(VALID_FLAGS) - {"--task-option", "--architecture"})  # task presets name sizes of theirs
        flags = draw(st.lists(st.sampled_from(choices), max_size=4, unique=True))
        values = {build_parser_dest(flag): as_value(draw(st.sampled_from(VALID_FLAGS[flag]))) for flag in flags}
        for first, second in (("max_steps", "epochs"), ("warmup_steps", "warmup_ratio")):
            if first in values and second in values:
                del values[second]
        layers.append(values)
    return layers[0], layers[1]


@FUZZ
@given(layers=valid_layers())
def test_valid_combinations_resolve_by_precedence(layers):
    """The command line beats the --config file, which beats the task's defaults and presets; min_lr follows the
    lr given; of `max_steps` and `epochs` (`warmup_steps` and `warmup_ratio`) the one given in the higher layer
    decides."""
    from hf_icl.training.arguments import parse_args

    config, line = layers

    def parsed(config: dict, line: dict):
        argv = ["--report-to=none", f"--config={yaml_file(yaml.safe_dump(config))}"]
        return parse_args([*argv, *(f"{flag_of_field(name)}={value}" for name, value in line.items())])

    merged = {**config, **line}
    try:
        args = parsed(config, line)
    except ValueError as err:  # only a final rate given above the peak one is refused
        without = parsed(*({k: v for k, v in layer.items() if k != "min_lr"} for layer in (config, line)))
        assert "argument --min-lr" in str(err) and merged["min_lr"] > without.lr, str(err)
        return
    superseded = set()
    for first, second in (("max_steps", "epochs"), ("warmup_steps", "warmup_ratio")):
        if second in line and first not in line or second in config and first not in merged:
            superseded.add(first)
    for name, value in merged.items():
        expected = None if name in superseded else value
        assert getattr(args, name) == expected, (name, getattr(args, name), expected)
    if "lr" in merged and "min_lr" not in merged:
        assert args.min_lr < args.lr
