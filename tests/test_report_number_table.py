"""The report's table of one published source beside ours: the recipe column names exactly the fields that differ
between rows, CPU minutes per run follow the budget's rule (CPU seconds over the run's threads), and a number's
spread is the sd over seeds of what its line shows."""

from pathlib import Path

from hf_icl.report.findings import Line, spread_shown
from hf_icl.report.number_table import HEADER, cpu_minutes_text, recipe_differences, table_rows
from hf_icl.report.papers import load_paper_numbers
from hf_icl.report.runs import RunRecord, Setting


def record(name, accuracy, lr=3e-3, layers=4, cpu_s=600.0, threads=1, seed=0):
    config = {"lr": lr, "weight_decay": 0.1, "max_steps": 3000, "threads": threads, "seed": seed,
              "overrides": {"num_hidden_layers": layers}}  # fmt: skip
    metrics = {"task": "regbench", "architecture": name, "run_config": config, "train": {"cpu_time_s": cpu_s},
               "test": {"model": {"accuracy": accuracy}}}  # fmt: skip
    return RunRecord(Path(f"{name}-{seed}/metrics.json"), "zoo", f"{name}-s{seed}", metrics)


def test_recipe_column_names_only_what_differs():
    same = [Setting("zoo", [record("a", 0.9)]), Setting("zoo", [record("b", 0.8)])]
    assert recipe_differences(same) == ["–", "–"]  # one recipe: nothing to name
    searched = [Setting("zoo", [record("a", 0.9, lr=1e-3, layers=6)]), Setting("zoo", [record("b", 0.8)]), None]
    assert recipe_differences(searched) == ["lr=0.001, num_hidden_layers=6", "lr=0.003, num_hidden_layers=4", "–"]
    with_heads = record("c", 0.95)
    with_heads.metrics["run_config"]["overrides"]["ngram_heads"] = [{"layer": 1, "orders": [1, 2, 3]}]
    assert recipe_differences([same[0], Setting("zoo", [with_heads])]) == ["–", "–"]  # the label names the heads


def test_cpu_minutes_and_seeds_per_row():
    two_threads = Setting("zoo", [record("a", 0.9, cpu_s=2400, threads=2, seed=s) for s in range(3)])
    assert cpu_minutes_text(two_threads) == "20.0"  # 2,400 CPU s over two threads: 20 minutes of its cores
    assert cpu_minutes_text(Setting("zoo", [record("a", 0.9, cpu_s=900)])) == "15.0" and cpu_minutes_text(None) == "–"
    line = Line("A · accuracy", "0.9", "0.9", "±0.03", "reproduced", "`zoo` / `a`", (0.9, 0.9), setting=two_threads)
    (row,) = table_rows([line])
    assert len(row) == len(HEADER) and row[HEADER.index("seeds")] == 3
    assert row[HEADER.index("CPU min per run")] == "20.0" and row[HEADER.index("recipe")] == "–"


def test_spread_is_the_sd_of_the_number_shown():
    numbers = load_paper_numbers()
    entry = next(e for e in numbers.entries.values() if e.metric == "model.accuracy" and e.statistic == "mean")
    seeds = Setting("zoo", [record("a", acc, seed=s) for s, acc in enumerate((0.7, 0.8, 0.9))])
    assert abs(spread_shown(entry, seeds) - 0.1) < 1e-12  # sample sd of 0.7, 0.8, 0.9
    assert spread_shown(entry, Setting("zoo", [record("a", 0.7)])) == 0.0 and spread_shown(entry, None) == 0.0
    best_of = next((e for e in numbers.entries.values() if e.metric == "model.accuracy" and e.statistic == "max"), None)
    assert best_of is not None and spread_shown(best_of, seeds) == 0.0  # the best seed shown: no error bar


def test_a_shared_override_as_given_does_not_split_the_seeds_of_a_setting():
    """A shared override the architecture reads is recorded again in `overrides` (what the setting compares), one it
    does not read changed nothing: seeds written before shared overrides existed and after are one setting, while an
    applied value that differs still splits them."""
    before, after = record("a", 0.9, seed=0), record("a", 0.9, seed=1)
    before.metrics["run_config"]["overrides"] = {"num_hidden_layers": 4, "position_embedding": "rope"}
    after.metrics["run_config"]["overrides"] = {"num_hidden_layers": 4, "position_embedding": "rope"}
    after.metrics["run_config"]["shared_overrides"] = {"position_embedding": "rope"}
    unread = record("a", 0.9, seed=2)  # e.g. Mamba given a shared position embedding it has no use for
    unread.metrics["run_config"]["overrides"] = {"num_hidden_layers": 4, "position_embedding": "rope"}
    unread.metrics["run_config"]["shared_overrides"] = {"position_embedding": "alibi"}
    assert before.setting == after.setting == unread.setting
    applied = record("a", 0.9, seed=3)
    applied.metrics["run_config"]["overrides"] = {"num_hidden_layers": 4, "position_embedding": "alibi"}
    assert applied.setting != before.setting


def test_a_seed_resumed_with_changed_settings_joins_its_setting_and_a_changed_field_does_not():
    """A run continued with `--resume --allow-changed-settings` (a shorter schedule that matched up to its checkpoint)
    is the same setting as its fresh seeds: what it changed is in its saved settings, the flags are bookkeeping."""
    fresh, resumed, other = record("a", 0.9, seed=0), record("a", 0.9, seed=1), record("a", 0.9, seed=2, lr=1e-3)
    resumed.metrics["run_config"] |= {"resume": True, "allow_changed_settings": True}
    assert fresh.setting == resumed.setting != other.setting
    with_plugin = record("a", 0.9, seed=3)
    with_plugin.metrics["run_config"]["imports"] = ["my_plugin"]  # a plug-in may define the model: another setting
    assert with_plugin.setting != fresh.setting
