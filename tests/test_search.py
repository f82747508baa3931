"""The sweep's hyperparameter search (`training.search`, optuna): bad specs fail in one line before any run; a real
search trains its trials, writes the trials table and a `best.yaml` that train.py reads, and spends its budget once;
a pruned trial ends early through the run's `STOP` file as a finished run; a trial cut by a kill is resumed under its
number; the live validation records equal the finished run's."""

import json

import pytest
import yaml

pytest.importorskip("optuna")

from hf_icl.sweep import main  # noqa: E402
from hf_icl.training import search as search_module  # noqa: E402
from hf_icl.training.arguments import parse_args  # noqa: E402
from hf_icl.training.progress import read_validation  # noqa: E402

BASE = {"task": "regbench", "preset": "tiny", "n_train": 100, "task_option.n_test": 8, "task_option.n_validation": 8,
        "max_steps": 4, "eval_every": 2, "batch_size": 4, "threads": 1, "report_to": "none",
        "override.num_hidden_layers": 1, "warmup_steps": 0}  # fmt: skip
NARROW = {"override.hidden_size": 32, "override.intermediate_size": 64}
SEARCH = {"trials": 2, "objective": "accuracy", "direction": "maximize", "seed": 0,
          "space": {"lr": {"low": 1.0e-4, "high": 1.0e-1, "log": True}, "variant": {"narrow": NARROW, "tiny": {}}}}


def write_spec(tmp_path, search=SEARCH, base=BASE, **extra):
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({"output_root": str(tmp_path / "out"), "base": base, "search": search, **extra}))
    return str(path)


@pytest.mark.parametrize(
    "search, base, extra, message",
    [
        ({**SEARCH, "budget": 3}, BASE, {}, "search.budget is not one of: engine, trials"),
        ({**SEARCH, "trials": 0}, BASE, {}, "search.trials=0 must be an integer ≥ 1"),
        ({**SEARCH, "direction": "up"}, BASE, {}, "search.direction='up' is not one of: maximize, minimize"),
        ({**SEARCH, "space": {"lr": {"low": 1, "high": 0.1}}}, BASE, {}, "low=1 and high=0.1 must be numbers"),
        ({**SEARCH, "space": {"lr": {"low": 0, "high": 1, "log": True}}}, BASE, {}, "log=true needs low > 0"),
        ({**SEARCH, "space": {"lrr": {"choices": [1]}}}, BASE, {}, "key 'lrr' is not one of"),
        ({**SEARCH, "pruner": {"kind": "hyperband", "patience": 2}}, BASE, {}, "search.pruner.patience is not a"),
        (SEARCH, BASE, {"grid": {"seed": [0]}}, "grid and search exclude each other"),
        (SEARCH, {**BASE, "max_steps": 5}, {}, "max_steps a multiple of it (got eval_every=2, max_steps=5)"),
    ],
)
def test_bad_searches_fail_in_one_line_before_any_run(tmp_path, capsys, search, base, extra, message):
    with pytest.raises(SystemExit) as exit_info:
        main([write_spec(tmp_path, search, base, **extra)])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert message in error, error
    assert not any((tmp_path / "out").glob("trial-*/metrics.json"))


def test_a_search_trains_its_trials_writes_the_table_and_a_best_config_once(tmp_path, monkeypatch):
    monkeypatch.setattr(search_module, "POLL_SECONDS", 0.2)
    spec = write_spec(tmp_path)
    assert main([spec]) == 0
    out = tmp_path / "out"
    rows = json.loads((out / "trials.json").read_text())
    assert [row["state"] for row in rows] == ["complete", "complete"]
    assert all(row["steps"] == 4 and set(row["validation"]) >= {"accuracy", "tvd"} for row in rows)
    for row in rows:  # the live records are what the finished run keeps in metrics.json
        metrics = json.loads((out / f"trial-{row['trial']:03d}" / "metrics.json").read_text())
        assert read_validation(out / f"trial-{row['trial']:03d}") == metrics["train"]["validation_history"]
        assert metrics["run_config"]["lr"] == pytest.approx(row["setting"]["lr"])
    best = max(rows, key=lambda row: row["value"])
    args = parse_args(["--config", str(out / "best.yaml"), "--output-dir", str(tmp_path / "again")])
    assert args.lr == pytest.approx(best["setting"]["lr"]) and args.max_steps == 4
    assert (args.overrides.get("hidden_size") == 32) == (best["setting"]["variant"] == "narrow")
    table = (out / "trials.md").read_text()
    assert "| trial | state | setting | steps | accuracy | tvd | train CPU s |" in table and "Selected: trial" in table
    assert main([spec]) == 0  # the budget is spent: nothing new is trained
    assert len(json.loads((out / "trials.json").read_text())) == 2


def test_a_pruned_trial_stops_early_as_a_finished_run(tmp_path, monkeypatch):
    monkeypatch.setattr(search_module, "POLL_SECONDS", 0.2)
    pruned = {**SEARCH, "trials": 1, "pruner": {"kind": "threshold", "lower": 2.0}}  # accuracy < 2: prune at once
    assert main([write_spec(tmp_path, pruned, {**BASE, "max_steps": 3000})]) == 0
    run = tmp_path / "out" / "trial-000"
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["train"]["stopped_by"] == "stop_requested" and metrics["train"]["steps"] < 3000
    assert not (run / "STOP").exists() and (run / "model").is_dir()
    assert json.loads((tmp_path / "out" / "trials.json").read_text())[0]["state"] == "pruned"


@pytest.mark.slow
def test_a_trial_cut_by_a_kill_is_resumed_under_its_number(tmp_path, monkeypatch):
    monkeypatch.setattr(search_module, "POLL_SECONDS", 0.2)
    spec = write_spec(tmp_path, {**SEARCH, "trials": 1})
    from hf_icl import sweep

    search = search_module.Search(sweep.load_spec(spec), sweep)
    trial = search.study.ask()  # a process that asked, then died before telling: the trial stays RUNNING
    search_module.suggest(trial, search.search)
    assert main([spec]) == 0
    rows = json.loads((tmp_path / "out" / "trials.json").read_text())
    assert [(row["trial"], row["state"]) for row in rows] == [(0, "complete")]


def test_a_cut_trial_another_process_ended_meanwhile_is_skipped_not_trained(tmp_path):
    """A process lists the cut trials once at its start; if another process resumes one of them and ends it (here:
    fails it) before this process reaches it, this process skips it instead of training it again and crashing on
    optuna's UpdateFinishedTrialError (which left its trial's training process running as an orphan)."""
    spec = write_spec(tmp_path, {**SEARCH, "trials": 1})
    from hf_icl import sweep

    search = search_module.Search(sweep.load_spec(spec), sweep)
    trial = search.study.ask()
    search_module.suggest(trial, search.search)
    (listed,) = search.cut_trials()  # this process's list, read at its start
    other = search_module.Search(sweep.load_spec(spec), sweep)  # another process on the same journal
    other.study.tell(trial.number, state=other.optuna.trial.TrialState.FAIL)
    result = search.run_trial(listed)
    assert result["status"] == "skipped: already finished"
    assert not (tmp_path / "out" / "trial-000").exists()  # nothing trained


def test_a_resumed_trial_does_not_report_its_earlier_steps_again(tmp_path, monkeypatch):
    """The journal already holds the records a killed trial reported; the resumed run reports only the new steps
    (optuna warns and ignores a step reported twice)."""
    import warnings

    monkeypatch.setattr(search_module, "POLL_SECONDS", 0.2)
    spec = write_spec(tmp_path, {**SEARCH, "trials": 1})
    from hf_icl import sweep

    search = search_module.Search(sweep.load_spec(spec), sweep)
    trial = search.study.ask()
    search_module.suggest(trial, search.search)
    trial.report(0.5, 2)  # reported before the kill
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main([spec]) == 0
    assert not [w for w in caught if "already reported" in str(w.message)]
    rows = json.loads((tmp_path / "out" / "trials.json").read_text())
    assert [(row["trial"], row["state"], row["steps"]) for row in rows] == [(0, "complete", 4)]


def test_two_workers_draw_distinct_settings_and_a_rerun_draws_the_same(tmp_path):
    """Two sweep processes on one study (one journal, a study object each) asking in turn: with one sampler per
    trial seeded by (seed, trial number) their start-up settings differ (one sampler per process, seeded alike, drew
    them in lockstep: trials 0 and 1 the same); a rerun of the search draws the same settings trial by trial."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)

    def draw(journal):
        storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(journal)))
        workers = [optuna.create_study(study_name="s", storage=storage, load_if_exists=True) for _ in range(2)]
        drawn = []
        for number in range(6):
            study = workers[number % 2]
            trial = study.ask()
            study.sampler = search_module.trial_sampler(optuna, 0, trial.number)
            drawn.append((trial.number, trial.suggest_float("lr", 1e-4, 1e-2, log=True),
                          trial.suggest_categorical("variant", ["a", "b", "c"])))  # fmt: skip
            study.tell(trial, 0.0)
        return drawn

    first = draw(tmp_path / "one.journal")
    assert [number for number, *_ in first] == list(range(6))
    assert len({lr for _, lr, _ in first}) == 6  # no two trials share a setting
    assert draw(tmp_path / "two.journal") == first  # reproducible from the seed


def test_a_prune_request_after_the_last_step_leaves_the_trial_complete(tmp_path, monkeypatch):
    """The pruner may ask to stop a trial at its final rung, after it trained every step (the zoo's Mamba search,
    trials 8 and 9): the trial is complete, not pruned. The request is dropped here to make "too late" certain."""
    monkeypatch.setattr(search_module, "POLL_SECONDS", 0.2)
    monkeypatch.setattr(search_module, "request_stop", lambda run_dir, reason: None)
    late = {**SEARCH, "trials": 1, "pruner": {"kind": "threshold", "lower": 2.0}}  # accuracy < 2: prune at once
    assert main([write_spec(tmp_path, late)]) == 0
    metrics = json.loads((tmp_path / "out" / "trial-000" / "metrics.json").read_text())
    assert metrics["train"]["stopped_by"] == "steps" and metrics["train"]["steps"] == 4
    assert json.loads((tmp_path / "out" / "trials.json").read_text())[0]["state"] == "complete"
