"""`python -m hf_icl.sweep`: grid expansion and naming, bad specs failing before any run, skip/resume/restart
decisions, and a real two-point grid at tiny size, two at a time, that the report then finds."""

import json

import pytest
import yaml

from hf_icl import sweep
from hf_icl.report import main as report_main
from hf_icl.sweep import changed_points_message, check_points, expand, load_spec, main, point_command, point_state

TINY = {"task": "regbench", "preset": "tiny", "n_train": 100, "task_option.n_test": 8, "task_option.n_validation": 8,
        "max_steps": 2, "batch_size": 16, "threads": 1, "report_to": "none", "log_every": 1}  # fmt: skip


def write_spec(tmp_path, grid, base=TINY, **extra):
    path = tmp_path / "spec.yaml"
    spec = {"output_root": str(tmp_path / "sweep"), "base": base, "grid": grid, **extra}
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def test_grid_points_are_named_and_carry_their_arguments(tmp_path):
    grid = {"architecture": ["transformer", "gla"], "ngram_heads": {"none": None, "ngh": "1:1,2,3"},
            "override.num_hidden_layers": [2], "lr": [1e-3, 3e-3]}  # fmt: skip
    points = expand(load_spec(write_spec(tmp_path, grid)))
    assert len(points) == 8
    first, last = points[0], points[-1]
    assert first.name == "architecture=transformer,ngram_heads=none,num_hidden_layers=2,lr=0.001"
    assert last.name == "architecture=gla,ngram_heads=ngh,num_hidden_layers=2,lr=0.003"
    assert first.arguments["overrides"] == {"num_hidden_layers": 2} and first.arguments["task_options"]["n_test"] == 8
    assert last.arguments["overrides"]["ngram_heads"] == [{"layer": 1, "orders": [1, 2, 3], "replace": False}]
    assert last.arguments["output_dir"] == str(tmp_path / "sweep" / last.name)


@pytest.mark.parametrize(
    "grid, base, message",
    [
        ({"architecure": ["gla"]}, TINY, "key 'architecure' is not one of"),
        ({"output_dir": ["x"]}, TINY, "'output_dir' is set by the sweep"),
        ({"seed": []}, TINY, "grid.seed=[] must be a non-empty list"),
        ({"batch_size": [16, 0]}, TINY, "point batch_size=0:"),
        ({"architecture": ["gpt9"]}, TINY, "point architecture=gpt9:"),
    ],
)
def test_bad_specs_fail_before_any_run(tmp_path, grid, base, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([str(write_spec(tmp_path, grid, base))])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "sweep").exists()


def test_unfinished_points_resume_or_restart(tmp_path):
    spec = load_spec(write_spec(tmp_path, {"seed": [0, 1, 2, 3]}))
    new, restart, resume, finished = expand(spec)
    (tmp_path / "sweep" / restart.name).mkdir(parents=True)
    (tmp_path / "sweep" / restart.name / "hf_icl_run.json").write_text("{}")  # died before its first checkpoint
    checkpoint = tmp_path / "sweep" / resume.name / "checkpoints" / "step_1"
    checkpoint.mkdir(parents=True)
    (checkpoint / "trainer_state.json").write_text(json.dumps({"global_step": 1}))
    (tmp_path / "sweep" / finished.name).mkdir()
    (tmp_path / "sweep" / finished.name / "metrics.json").write_text("{}")
    states = [point_state(tmp_path / "sweep" / p.name) for p in (new, restart, resume, finished)]
    assert states == ["new", "restart", "resume", "finished"]
    assert point_command(spec, new)[-2:] == ["--output-dir", new.arguments["output_dir"]]
    assert point_command(spec, restart)[-1] == "--overwrite" and point_command(spec, resume)[-1] == "--resume"
    assert point_command(spec, new)[1:4] == ["-m", "hf_icl.train", "--config"]
    spec.accelerate = ["--multi_gpu", "--num_processes", 2]
    assert point_command(spec, new)[:6] == ["accelerate", "launch", "--multi_gpu", "--num_processes", "2", "-m"]


def test_variants_set_several_keys_at_once(tmp_path):
    variants = {"tf": {"architecture": "transformer"}, "gla+ngh": {"architecture": "gla", "ngram_heads": "1:2"}}
    grid = {"variant": variants, "seed": [0, 1]}
    points = expand(load_spec(write_spec(tmp_path, grid)))
    assert [p.name for p in points] == ["variant=tf,seed=0", "variant=tf,seed=1", "variant=gla+ngh,seed=0",
                                        "variant=gla+ngh,seed=1"]  # fmt: skip
    assert points[2].arguments["architecture"] == "gla" and points[2].arguments["seed"] == 0
    assert points[2].arguments["overrides"]["ngram_heads"] == [{"layer": 1, "orders": [2], "replace": False}]
    assert "ngram_heads" not in points[0].arguments.get("overrides", {})
    for bad, message in [({"variant": ["gla"]}, "grid.variant must be a mapping"),
                         ({"variant": {"x": "gla"}}, "grid.variant.x='gla' must be a mapping"),
                         ({"variant": {"x": {"architecure": "gla"}}}, "key 'architecure' is not one of")]:  # fmt: skip
        with pytest.raises(ValueError, match=message):
            load_spec(write_spec(tmp_path, bad))


def test_a_list_of_grids_trains_their_points_together(tmp_path):
    search = {"variant": {"a": {"lr": 1e-3}, "b": {"lr": 3e-3}}, "seed": [0]}
    chosen = {"variant": {"a": {"lr": 1e-3}}, "seed": [1, 2]}
    spec = load_spec(write_spec(tmp_path, [search, chosen]))
    points = expand(spec)
    assert [p.name for p in points] == ["variant=a,seed=0", "variant=b,seed=0", "variant=a,seed=1", "variant=a,seed=2"]
    assert [p.arguments["lr"] for p in points] == [1e-3, 3e-3, 1e-3, 1e-3]
    assert [p.arguments["seed"] for p in points] == [0, 0, 1, 2]
    assert [p.name for p in sweep.select_points(points, ["variant=a"])] == [p.name for p in points if "=a," in p.name]
    with pytest.raises(ValueError, match="two grid points have the same name"):
        expand(load_spec(write_spec(tmp_path, [search, search])))
    for bad, message in [([], r"grid=\[\] must be a mapping of key: values, or a non-empty list"),
                         ([search, {}], r"must be a mapping of key: values, or a non-empty list of such mappings"),
                         ([search, {"seed": []}], r"grid\[1\].seed=\[\] must be a non-empty list"),
                         ([{"variant": {"x": "gla"}}], r"grid\[0\].variant.x='gla' must be a mapping"),
                         ([{"architecure": ["gla"]}], "key 'architecure' is not one of")]:  # fmt: skip
        with pytest.raises(ValueError, match=message):
            load_spec(write_spec(tmp_path, bad))


def test_config_file_sits_under_base(tmp_path):
    config = tmp_path / "recipe.yaml"
    config.write_text(yaml.safe_dump({**{k: v for k, v in TINY.items() if "." not in k}, "lr": 5e-3, "max_steps": 9,
                                      "overrides": {"dropout": 0.1}}))  # fmt: skip
    spec = load_spec(write_spec(tmp_path, {"seed": [0]}, base={"max_steps": 3, "override.num_hidden_layers": 1},
                                config=str(config)))  # fmt: skip
    (point,) = expand(spec)
    assert point.arguments["lr"] == 5e-3 and point.arguments["max_steps"] == 3  # base wins over the config file
    assert point.arguments["overrides"] == {"dropout": 0.1, "num_hidden_layers": 1}
    gla_without = {"architecture": "gla", "override.dropout": None, "task_option.n_test": None}
    unset = {"variant": {"tf": {}, "gla": gla_without}}
    tf, gla = expand(load_spec(write_spec(tmp_path, unset, base={"task_option.n_test": 8}, config=str(config))))
    assert tf.arguments["overrides"] == {"dropout": 0.1} and tf.arguments["task_options"] == {"n_test": 8}
    assert gla.arguments["overrides"] == {} and gla.arguments["task_options"] == {}  # null drops config's and base's
    check_points([gla])
    assert gla.settings["overrides"] == {} and "n_test" not in gla.settings["task_options"]
    config.write_text(yaml.safe_dump({"lr": "fast"}))
    with pytest.raises(ValueError, match="--config.*lr"):
        load_spec(write_spec(tmp_path, {"seed": [0]}, config=str(config)))


def test_an_override_s_null_also_drops_the_config_s_shared_override_of_the_field(tmp_path):
    """`override.position_embedding: null` means the preset's default applies, so under a config that shares RoPE
    (applied wherever a model reads it) the variant drops the shared value too; other variants keep it, and a null
    shared override drops only the shared value."""
    config = tmp_path / "recipe.yaml"
    config.write_text(yaml.safe_dump({**{k: v for k, v in TINY.items() if "." not in k},
                                      "overrides": {"position_embedding": "rope"},
                                      "shared_overrides": {"position_embedding": "rope"}}))  # fmt: skip
    variants = {"variant": {"shared": {}, "no_positions": {"override.position_embedding": None},
                            "shared_dropped": {"shared_override.position_embedding": None}}}  # fmt: skip
    shared, no_positions, shared_dropped = expand(load_spec(write_spec(tmp_path, variants, config=str(config))))
    assert shared.arguments["shared_overrides"] == {"position_embedding": "rope"}
    assert no_positions.arguments["overrides"] == {} and no_positions.arguments["shared_overrides"] == {}
    assert shared_dropped.arguments["overrides"] == {"position_embedding": "rope"}
    assert shared_dropped.arguments["shared_overrides"] == {}


def test_a_variant_may_name_its_own_config_file(tmp_path):
    """Each model's own recipe file, one experiment: a variant's `config` replaces the spec's for its points only,
    `base` and the grid still apply on top, and a bad file is refused before any run."""
    plain = {k: v for k, v in TINY.items() if "." not in k}
    shared, own = tmp_path / "shared.yaml", tmp_path / "own.yaml"
    shared.write_text(yaml.safe_dump({**plain, "lr": 1e-3}))
    own.write_text(yaml.safe_dump({**plain, "architecture": "gla", "lr": 4e-3, "weight_decay": 0.0}))
    grid = {"variant": {"tf": {}, "gla": {"config": str(own)}}, "seed": [0, 1]}
    tf0, tf1, gla0, gla1 = expand(load_spec(write_spec(tmp_path, grid, base={"max_steps": 3}, config=str(shared))))
    assert (tf0.arguments["lr"], gla1.arguments["lr"], gla1.arguments["weight_decay"]) == (1e-3, 4e-3, 0.0)
    assert gla0.arguments["architecture"] == "gla" and "config" not in gla0.arguments
    assert {p.arguments["max_steps"] for p in (tf0, gla0)} == {3} and gla1.arguments["seed"] == 1
    check_points([gla0])
    own.write_text(yaml.safe_dump({"lr": "fast"}))
    with pytest.raises(ValueError, match="--config.*lr"):
        load_spec(write_spec(tmp_path, grid, config=str(shared)))


@pytest.mark.parametrize(
    "flags, message",
    [(["--jobs", "0"], "--jobs: jobs=0 is not allowed"), (["--jobs", "2", "--launcher", "ray"], "only the local")],
)
def test_bad_jobs_fail_before_any_run(tmp_path, flags, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([str(write_spec(tmp_path, {"seed": [0]})), *flags])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "sweep").exists()


@pytest.mark.parametrize("threads, jobs, refused", [(2, 2, True), (1, 2, False), (2, 1, False), (1, 3, True)])
def test_more_threads_at_a_time_than_cores_are_refused(tmp_path, capsys, monkeypatch, threads, jobs, refused):
    """On a 2-core machine: two points of 2 threads at a time (the slip of a spec whose config sets `threads: 2`, run
    with --jobs 2) or three of 1 are refused before any run, naming --jobs and the cores; what fits is not."""
    monkeypatch.setattr(sweep, "available_cores", lambda: 2)
    monkeypatch.setattr(sweep, "run_locally", lambda spec, points, jobs: [])  # nothing trains in this test
    spec = write_spec(tmp_path, {"seed": [0, 1, 2]}, base={**TINY, "threads": threads})
    if not refused:
        assert main([str(spec), "--jobs", str(jobs)]) == 0
        return
    with pytest.raises(SystemExit) as exit_info:
        main([str(spec), "--jobs", str(jobs)])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == 2 and len(err) == 1, err
    assert "argument --jobs" in err[0] and "than this machine's 2 cores" in err[0] and "pass --jobs" in err[0]
    assert not (tmp_path / "sweep").exists()


def test_dry_run_lists_points_and_runs_nothing(tmp_path, capsys):
    assert main([str(write_spec(tmp_path, {"seed": [0, 1]})), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "seed=0  [new]" in out and "seed=1  [new]" in out and "2 points" in out
    assert not (tmp_path / "sweep").exists()


def test_only_picks_points_by_the_labels_in_their_names(tmp_path):
    grid = {"variant": {"a": {"lr": 1e-3}, "b": {"lr": 3e-3}, "c": {"lr": 1e-2}}, "seed": [0, 1, 2]}
    points = expand(load_spec(write_spec(tmp_path, grid)))
    assert sweep.select_points(points, []) == points
    names = lambda only: [p.name for p in sweep.select_points(points, only)]  # noqa: E731
    assert names(["seed=1"]) == ["variant=a,seed=1", "variant=b,seed=1", "variant=c,seed=1"]
    assert names(["variant=b", "seed=1", "seed=2"]) == ["variant=b,seed=1", "variant=b,seed=2"]  # a key's labels add up
    assert names(["seed=2", "variant=c", "variant=a"]) == ["variant=a,seed=2", "variant=c,seed=2"]


@pytest.mark.parametrize(
    "only, message",
    [
        ("seed", "argument --only: 'seed' is not KEY=LABEL"),
        ("sead=1", "argument --only: no grid key 'sead'; the points' keys are seed, variant"),
        ("seed=7", "argument --only: no point has seed=7; seed is one of 0, 1"),
    ],
)
def test_a_bad_only_is_one_line_before_any_run(tmp_path, capsys, only, message):
    spec = write_spec(tmp_path, {"variant": {"a": {"lr": 1e-3}}, "seed": [0, 1]})
    with pytest.raises(SystemExit) as exit_info:
        main([str(spec), "--only", only])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == 2 and len(err) == 1 and message in err[0], err
    assert not (tmp_path / "sweep").exists()


def test_dry_run_with_only_lists_the_picked_points(tmp_path, capsys):
    assert main([str(write_spec(tmp_path, {"seed": [0, 1, 2]})), "--dry-run", "--only", "seed=2"]) == 0
    out = capsys.readouterr().out
    assert "seed=2  [new]" in out and "seed=0" not in out and "1 points" not in out and "1 point" in out


def test_a_grid_trains_two_points_at_a_time_skips_when_done_and_reports(tmp_path, capsys):
    spec = write_spec(tmp_path, {"architecture": ["transformer", "lstm"], "lr": [3e-3]})
    assert main([str(spec), "--jobs", "2"]) == 0  # two points at a time
    runs = sorted((tmp_path / "sweep").glob("*/metrics.json"))
    assert len(runs) == 2
    metrics = json.loads(runs[0].read_text())
    assert metrics["train"]["steps"] == 2 and metrics["run_config"]["task_options"] == {"n_test": 8, "n_validation": 8}
    assert (tmp_path / "sweep" / f"{runs[0].parent.name}.yaml").is_file()
    capsys.readouterr()
    assert main([str(spec)]) == 0  # everything finished: nothing is retrained
    assert capsys.readouterr().out.count("| finished before |") == 2
    counts = report_main([str(tmp_path / "sweep"), "--output", str(tmp_path / "report")])
    assert counts["runs"] == 2
    assert "architecture=lstm,lr=0.003" in (tmp_path / "report" / "runs.md").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("launcher, options", [("submitit", {"cluster": "debug"}), ("ray", {"num_cpus": 1})])
def test_cluster_launchers_run_the_points(tmp_path, launcher, options):
    pytest.importorskip(launcher)
    spec = write_spec(tmp_path, {"seed": [0]}, launcher={launcher: options})
    assert main([str(spec), "--launcher", launcher]) == 0
    assert (tmp_path / "sweep" / "seed=0" / "metrics.json").is_file()


def test_points_whose_saved_settings_differ_from_the_spec_are_refused_or_rerun(tmp_path, capsys):
    """After the base changed, every point was "finished before" and its stale results were kept."""
    spec = write_spec(tmp_path, {"seed": [0]})
    assert main([str(spec)]) == 0
    stale = {p: p.read_bytes() for p in sorted((tmp_path / "sweep").glob("*/metrics.json"))}
    spec = write_spec(tmp_path, {"seed": [0]}, base={**TINY, "lr": 0.01})
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main([str(spec)])
    err = capsys.readouterr().err.strip().split("\n")
    assert exit_info.value.code == 2 and len(err) == 1, err
    assert "1 point was run with other settings" in err[0]
    assert "seed=0 (lr: saved 0.003, now 0.01; min_lr: saved 2.5e-05, now 8.3" in err[0]  # min_lr follows lr
    assert "--rerun-changed" in err[0]
    assert {p: p.read_bytes() for p in stale} == stale  # refused: nothing was touched
    assert main([str(spec), "--dry-run"]) == 0
    assert "seed=0  [changed: lr: saved 0.003, now 0.01; min_lr" in capsys.readouterr().out
    assert main([str(spec), "--rerun-changed"]) == 0
    assert capsys.readouterr().out.count("| trained |") == 1
    for path in stale:
        assert json.loads(path.read_text())["run_config"]["lr"] == 0.01
    assert main([str(spec)]) == 0  # now it matches the spec
    assert capsys.readouterr().out.count("| finished before |") == 1


def test_the_refusal_counts_and_names_every_changed_point(tmp_path):
    """Several changed points (finished runs written by hand): one line names each with its differences."""
    points = expand(load_spec(write_spec(tmp_path, {"seed": [0, 1]})))
    check_points(points)
    for point in points:
        folder = tmp_path / "sweep" / point.name
        folder.mkdir(parents=True)
        (folder / "metrics.json").write_text(json.dumps({"run_config": {**point.settings, "lr": 0.01}}))
    message = changed_points_message(points)
    assert message.startswith("argument spec: 2 points were run with other settings") and "\n" not in message
    assert "seed=0 (lr: saved 0.01, now 0.003)" in message and "seed=1 (lr: saved 0.01, now 0.003)" in message


def test_bookkeeping_changes_do_not_make_a_point_changed(tmp_path):
    (point,) = expand(load_spec(write_spec(tmp_path, {"seed": [0]})))
    folder = tmp_path / "sweep" / point.name
    folder.mkdir(parents=True)
    check_points([point])
    (folder / "metrics.json").write_text(json.dumps({"run_config": {**point.settings, "threads": 4, "log_every": 7}}))
    assert point_state(folder, point.settings) == "finished"
    (folder / "metrics.json").write_text(json.dumps({"run_config": {**point.settings, "batch_size": 8}}))
    assert point_state(folder, point.settings) == "changed"
    assert point_command(load_spec(tmp_path / "spec.yaml"), point)[-1] == "--overwrite"


def test_a_spec_extends_another_key_by_key(tmp_path):
    family = tmp_path / "family"
    family.mkdir()
    space = {"lr": {"low": 1e-4, "high": 1e-2, "log": True}, "override.num_attention_heads": {"choices": [2, 4]}}
    common = {"output_root": "unused", "base": {**TINY, "lr": 1e-3},
              "search": {"trials": 4, "objective": "accuracy", "space": space}}
    (family / "common.yaml").write_text(yaml.safe_dump(common))
    member = {"extends": "common.yaml", "output_root": str(tmp_path / "lstm"),
              "base": {"architecture": "lstm", "lr": 3e-3}, "search": {"space": {"override.num_attention_heads": None}}}
    (family / "lstm.yaml").write_text(yaml.safe_dump(member))
    spec = load_spec(family / "lstm.yaml")
    assert spec.output_root == str(tmp_path / "lstm") and spec.base["architecture"] == "lstm"
    assert spec.base["lr"] == 3e-3 and spec.base["max_steps"] == TINY["max_steps"]  # the member wins, the rest stays
    assert spec.search["trials"] == 4 and list(spec.search["space"]) == ["lr"]  # null removed the heads choice
    (family / "a.yaml").write_text(yaml.safe_dump({"extends": "b.yaml"}))
    (family / "b.yaml").write_text(yaml.safe_dump({"extends": "a.yaml"}))
    with pytest.raises(ValueError, match="'extends' goes round in a circle"):
        load_spec(family / "a.yaml")
    (family / "c.yaml").write_text(yaml.safe_dump({"extends": "missing.yaml"}))
    with pytest.raises(ValueError, match="missing.yaml' is not a file"):
        load_spec(family / "c.yaml")
