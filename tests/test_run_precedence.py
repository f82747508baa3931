"""Precedence of `train.py`'s settings (issue 29, item 2): dataclass defaults < the task family's defaults < the task
preset < `--config` < command line, and a value given explicitly is never replaced by a default.

Every family default and every preset value that sets a run field is overridden once from the command line and once
from a `--config` file (read from the registry, so a new family is covered when it registers). The fields that set
one thing together (`max_steps` over `epochs`, `warmup_steps` over `warmup_ratio`) give way to the other one given
explicitly, and two of them given together are refused naming both.
"""

from __future__ import annotations

import pytest
import yaml

from hf_icl.architectures import ARCHITECTURES
from hf_icl.tasks import FAMILIES, task_entry
from hf_icl.training.arguments import RUN_CHOICES, SUPERSEDES, flag_of_field, parse_args

BASE = ["--report-to", "none"]


def family_settings() -> list[tuple[str, str, str, object]]:
    """`(task, preset or None, field, value)` for every run field a family default or a task preset sets."""
    cases = []
    for family in FAMILIES.values():
        task = next(iter(family.tasks))
        for preset, values in [(None, family.run_defaults), *family.presets.items()]:
            cases += [(task, preset, name, value) for name, value in values.items()]
    return cases


CASES = family_settings()


def another_value(task: str, name: str, value):
    """A valid value of run field `name` other than `value`."""
    if name == "preset":
        return next(p for p in sorted(ARCHITECTURES["transformer"].presets) if p != value)
    if name in RUN_CHOICES:
        return next(choice for choice in RUN_CHOICES[name] if choice != value)
    if name == "curriculum":  # a dataset takes no curriculum: an empty one is its only value
        return [] if value else [f"{task_entry(task).option_fields[0]}=2:3:1:5"] if online(task) else None
    if name == "task_options":
        return {key: (not v) if isinstance(v, bool) else v + 1 for key, v in value.items()}
    if name == "overrides":  # each numeric model field one more (the others stay the preset's, merged key by key)
        return {key: v + 1 for key, v in value.items() if isinstance(v, int) and not isinstance(v, bool)}
    if isinstance(value, bool):
        return not value
    if value is None:
        return {"max_steps": 7, "warmup_steps": 3, "epochs": 2.0}[name]
    if isinstance(value, int):
        return value + 1
    return value / 2 if value else 0.01


def as_flags(name: str, value) -> list[str]:
    if name == "overrides":
        return [f"--override={key}={v}" for key, v in value.items()]
    if isinstance(value, bool):
        return [f"--{'' if value else 'no-'}{flag_of_field(name).removeprefix('--')}"]
    if name == "task_options":
        return [f"--task-option={key}={yaml.safe_dump(v).split(chr(10))[0]}" for key, v in value.items()]
    if name == "curriculum":
        return [f"--curriculum={text}" for text in value or ["none"]]
    return [f"{flag_of_field(name)}={value}"]


def online(task: str) -> bool:
    return task_entry(task).builder is None


def setting_argv(task: str, preset: str | None, name: str | None = None) -> list[str]:
    argv = [*BASE, "--task", task, *(["--task-preset", preset] if preset else [])]
    if online(task) and name != "max_steps":  # an online task needs a length (a preset may unset it)
        argv += ["--max-steps", "11"]
    return argv


def assert_has(args, name: str, value) -> None:
    if name in ("task_options", "overrides"):
        assert {key: getattr(args, name)[key] for key in value} == value
    elif name == "curriculum" and not value:
        assert args.curriculum == []
    else:
        assert getattr(args, name) == value, (name, getattr(args, name), value)


@pytest.mark.parametrize("source", ["command line", "config"])
@pytest.mark.parametrize("task, preset, name, value", CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CASES])
def test_an_explicit_value_beats_every_family_default_and_preset(task, preset, name, value, source, tmp_path):
    given = another_value(task, name, value)
    if given is None:
        pytest.skip(f"{name}={value!r} is the only value {task} allows")
    argv = setting_argv(task, preset, name)
    if source == "command line":
        argv += as_flags(name, given)
    else:
        config = tmp_path / "run.yaml"
        config.write_text(yaml.safe_dump({name: given}))
        argv += ["--config", str(config)]
    args = parse_args(argv)
    assert_has(args, name, given)


SUPERSEDED = [
    (task, preset, name, value)
    for task, preset, name, value in CASES
    if name in SUPERSEDES and value is not None and not online(task)
]


@pytest.mark.parametrize("task, preset, name, value", SUPERSEDED, ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in SUPERSEDED])
def test_the_explicit_alternative_unsets_a_default_that_would_decide(task, preset, name, value):
    """`--epochs 1` on RegBench trained the family's 1,500 steps; `--warmup-ratio` lost to its warmup_steps."""
    other = SUPERSEDES[name][0]
    args = parse_args([*setting_argv(task, preset), flag_of_field(other), "0.5" if other == "epochs" else "0.05"])
    assert getattr(args, name) is None and getattr(args, other) == (0.5 if other == "epochs" else 0.05)


def test_epochs_on_regbench_trains_epochs_not_the_family_steps():
    args = parse_args([*BASE, "--task", "regbench", "--n-train", "150", "--epochs", "1"])
    assert args.max_steps is None and args.epochs == 1.0
    assert parse_args([*BASE, "--task", "regbench"]).max_steps == 1500  # the family's default otherwise


@pytest.mark.parametrize(
    "argv, fragments",
    [
        (["--max-steps", "3", "--epochs", "1"], ["argument --max-steps", "max_steps=3 (--max-steps)", "--epochs"]),
        (["--warmup-steps", "3", "--warmup-ratio", "0.2"], ["--warmup-steps", "--warmup-ratio", "give one of them"]),
        (["--task", "linear_regression", "--epochs", "2"], ["argument --epochs", "sampled online", "--max-steps"]),
        (["--lr", "1e-5", "--min-lr", "1e-3"], ["argument --min-lr", "min_lr=0.001 is above lr=1e-05 (--lr)"]),
    ],
)
def test_conflicting_given_values_are_refused_naming_both(argv, fragments):
    with pytest.raises(ValueError) as raised:
        parse_args([*BASE, *argv])
    for fragment in fragments:
        assert fragment in str(raised.value), str(raised.value)


def test_a_config_file_that_gives_both_is_refused_and_the_command_line_replaces_the_configs_choice(tmp_path):
    both, steps = tmp_path / "both.yaml", tmp_path / "steps.yaml"
    both.write_text(yaml.safe_dump({"max_steps": 3, "epochs": 1}))
    steps.write_text(yaml.safe_dump({"max_steps": 3}))
    with pytest.raises(ValueError, match=r"argument --config: the file gives both max_steps=3 .* and epochs=1"):
        parse_args([*BASE, "--config", str(both)])
    args = parse_args([*BASE, "--config", str(steps), "--epochs", "2"])  # the higher layer chooses the length
    assert args.max_steps is None and args.epochs == 2.0


def test_min_lr_follows_an_explicit_lr():
    """A valid `--lr 1e-5` was refused as `argument --min-lr` because of the default min_lr."""
    args = parse_args([*BASE, "--lr", "1e-5", "--lr-schedule", "constant"])
    assert args.lr == 1e-5 and args.min_lr == pytest.approx(1e-5 * 4e-5 / 4e-3)  # the quickstart preset's ratio
    assert parse_args([*BASE]).min_lr == 4e-5  # the preset's own values are unchanged
    family = parse_args([*BASE, "--task", "regbench", "--lr", "1e-5"])  # no preset: RegBench's defaults
    assert family.min_lr == pytest.approx(1e-5 * 2.5e-5 / 3e-3)  # RegBench's ratio 2.5e-5 / 3e-3
    assert parse_args([*BASE, "--task", "regbench"]).min_lr == 2.5e-5
    paper = parse_args([*BASE, "--task-preset", "paper", "--lr", "1e-5"])
    assert paper.min_lr == pytest.approx(1e-5 * 2.5e-5 / 1e-4)  # the preset's ratio
    assert parse_args([*BASE, "--lr", "1e-5", "--min-lr", "0"]).min_lr == 0.0  # given: kept as given


def test_a_config_files_task_options_keep_the_familys_others(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({"task": "linear_regression", "task_options": {"n_test": 8}}))
    from_config = parse_args([*BASE, "--config", str(config)])
    from_flags = parse_args([*BASE, "--task", "linear_regression", "--task-option", "n_test=8"])
    assert from_config.task_options == from_flags.task_options == {"n_dims": 5, "n_points": 11, "n_test": 8}


def test_the_command_lines_choice_of_a_pair_beats_the_other_one_from_the_config(tmp_path):
    """A --config file's warmup_ratio with --warmup-steps on the command line was refused as "the command line gives
    both" (found by the combination fuzz test)."""
    config = tmp_path / "ratio.yaml"
    config.write_text(yaml.safe_dump({"warmup_ratio": 0.05, "epochs": 2}))
    args = parse_args([*BASE, "--config", str(config), "--warmup-steps", "1", "--max-steps", "9"])
    assert (args.warmup_steps, args.max_steps, args.warmup_ratio, args.epochs) == (1, 9, 0.05, 2)


def test_a_config_file_may_write_numbers_in_exponent_notation(tmp_path):
    """PyYAML reads `1e-5` as text (YAML 1.1): a valid `lr: 1e-5` was refused as "expected a finite number"."""
    config = tmp_path / "run.yaml"
    config.write_text("lr: 1e-5\nmin_lr: 1E-7\nwarmup_start_lr: 0\ntask_preset: paper\n")
    args = parse_args([*BASE, "--config", str(config)])
    assert (args.lr, args.min_lr, args.warmup_start_lr) == (1e-5, 1e-7, 0)


def test_a_bare_run_is_the_default_tasks_quickstart_preset():
    """`accelerate launch train.py` with no choice made trains RegBench's quickstart (the CPU recipe with P1's
    n-gram heads, 500 steps); bookkeeping flags and explicit values keep it and beat its values."""
    bare = parse_args(BASE)
    assert bare.task_preset == "quickstart"
    assert bare.overrides["ngram_heads"] == [{"layer": 1, "orders": [1, 2, 3], "replace": False}]
    assert (bare.max_steps, bare.augment, bare.overrides["num_hidden_layers"]) == (500, True, 4)
    assert (bare.batch_size, bare.warmup_steps, bare.lr, bare.min_lr) == (16, 50, 4e-3, 4e-5)  # search round 4
    assert "+ngh1.123" in str(bare.resolved_output_dir())
    shortened = parse_args([*BASE, "--max-steps", "20", "--threads", "1"])
    assert (shortened.task_preset, shortened.max_steps) == ("quickstart", 20)


@pytest.mark.parametrize("choice", [["--architecture", "transformer"], ["--task", "regbench"],
                                    ["--task-preset", "paper"], ["--config", "CONFIG"]])  # fmt: skip
def test_any_run_choice_leaves_the_quickstart_preset_out(choice, tmp_path):
    if choice[-1] == "CONFIG":
        choice = ["--config", str(tmp_path / "run.yaml")]
        (tmp_path / "run.yaml").write_text("max_steps: 30\n")
    args = parse_args([*BASE, *choice])
    assert args.task_preset != "quickstart" and "ngram_heads" not in args.overrides
    assert args.max_steps != 500


def test_a_family_naming_a_quickstart_preset_it_lacks_is_refused():
    import dataclasses

    family = FAMILIES["regbench"]
    with pytest.raises(ValueError, match="quickstart_preset='nope' is not one of its presets: paper, quickstart"):
        dataclasses.replace(family, quickstart_preset="nope")
