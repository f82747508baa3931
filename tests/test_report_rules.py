"""The report's referee rules on fabricated run folders: seeds per side, separation of the seeds, split outcomes,
complete contrasts, criteria that can fail, one evidence pool (controls and the CPU budget) and findings.json; and
Welch's test against scipy's own."""

import json
import math
import statistics

import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats
from test_report import FINDINGS, NUMBERS, copy_run, p5_pair, rate, write_run

import hf_icl
from hf_icl.report import assess, build_report, find_runs, load_paper_numbers
from hf_icl.report.build import number_lines
from hf_icl.report.findings import measured, select
from hf_icl.report.papers import PAPER_NUMBERS
from hf_icl.report.separation import welch


def rate_runs(finding_id, folder):
    return assess(FINDINGS[finding_id], NUMBERS, find_runs([folder]))


def test_overlapping_seeds_are_not_a_win(tmp_path):
    """P5 decision trees as committed: the Transformer 0.434 ± 0.072 against Mamba 0.570 ± 0.147. The mean gap
    passes the tolerance, the seeds do not separate: not ✔."""
    p5_pair(tmp_path / "overlap", "decision_tree", 0.434, 0.570, knn=1.5, spread=0.0)
    for name, errors in (("transformer", [0.416, 0.513, 0.372]), ("mamba", [0.655, 0.655, 0.399])):
        for seed, error in enumerate(errors):  # the committed seeds' spread
            file = tmp_path / "overlap" / f"{name}-s{seed}" / "metrics.json"
            metrics = json.loads(file.read_text())
            metrics["test"]["model"]["error_final"] = error
            file.write_text(json.dumps(metrics))
    result = assess(FINDINGS["p5-decision-tree"], NUMBERS, find_runs([tmp_path / "overlap"]))
    assert result.verdict == "inconclusive" and result.why == "not separated", result.reason
    line = result.lines[0]
    assert "Welch t = " in line.where and "one-sided p = " in line.where and line.separation.p_value > 0.05
    separated = p5_pair(tmp_path / "apart", "decision_tree", 0.30, 0.60, knn=1.5, spread=0.01)
    result = assess(FINDINGS["p5-decision-tree"], NUMBERS, separated)
    assert result.verdict in ("reproduced", "direction only") and not result.why, result.reason
    assert result.lines[0].separation.p_value < 0.05


def test_one_seed_contrasts_are_capped(tmp_path):
    """One seed a side: a win the paper's way is direction only (1 seed), a loss is too few seeds, never ✔ or ✘."""
    win = assess(FINDINGS["p5-decision-tree"], NUMBERS, p5_pair(tmp_path / "w", "decision_tree", 0.3, 0.6, seeds=1))
    assert win.verdict == "direction only" and win.why == "1 seed" and "capped" in win.reason
    loss = assess(FINDINGS["p5-decision-tree"], NUMBERS, p5_pair(tmp_path / "l", "decision_tree", 0.6, 0.3, seeds=1))
    assert loss.verdict == "inconclusive" and loss.why == "too few seeds"
    two = assess(FINDINGS["p5-decision-tree"], NUMBERS, p5_pair(tmp_path / "t", "decision_tree", 0.3, 0.6, seeds=2))
    assert two.verdict == "direction only" and two.why == "2 seeds" and two.seeds == {"Transformer": 2, "Mamba": 2}


def test_one_seed_values_are_capped(tmp_path):
    """A value finding follows the same seed rule: one seed within the tolerance is direction only (1 seed), one
    outside it is too few seeds; three seeds sign either way."""
    from test_report import regbench

    regbench(tmp_path / "in" / "mamba", "mamba", 0.84, 0.37)  # P1: 0.845 ± 0.03, 0.37 ± 0.03
    within = rate_runs("p1-mamba", tmp_path / "in")
    assert within.verdict == "direction only" and within.why == "1 seed" and "capped" in within.reason, within.reason
    regbench(tmp_path / "out" / "mamba", "mamba", 0.60, 0.55)
    outside = rate_runs("p1-mamba", tmp_path / "out")
    assert outside.verdict == "inconclusive" and outside.why == "too few seeds", outside.reason
    regbench(tmp_path / "out3" / "mamba", "mamba", 0.60, 0.55, seeds=3, spread=0.01)
    assert rate_runs("p1-mamba", tmp_path / "out3").verdict == "not reproduced"
    regbench(tmp_path / "in3" / "mamba", "mamba", 0.84, 0.37, seeds=3, spread=0.01)
    assert rate_runs("p1-mamba", tmp_path / "in3").verdict == "reproduced"


def test_a_finding_that_did_not_train_lists_what_was_tried(tmp_path):
    """"Did not train" comes with every committed setting of each model the finding names: how many, from which
    experiments, and the best in-range control value any reached (a model that learned somewhere is marked)."""
    from test_report import copy_run

    copy_run(tmp_path / "search" / "mamba-lr1e-3", "mamba", in_range=0.20, beyond=0.0, lr=1e-3)
    copy_run(tmp_path / "search" / "mamba-lr3e-3", "mamba", in_range=0.55, beyond=0.0, lr=3e-3)
    copy_run(tmp_path / "seeds" / "mamba", "mamba", in_range=0.10, beyond=0.0, seeds=3, lr=1e-2)
    copy_run(tmp_path / "lstm-search" / "lstm", "lstm", in_range=0.95, beyond=0.0)
    result = rate_runs("p4-gssm-fail-beyond", tmp_path)
    assert result.verdict == "inconclusive"
    mamba, lstm = result.attempts
    assert (mamba.model, mamba.settings, mamba.experiments) == ("Mamba", 3, ("search", "seeds"))
    assert mamba.best == pytest.approx(0.55) and "mamba-lr3e-3" in mamba.best_where and not mamba.learned
    assert (lstm.model, lstm.settings, lstm.best, lstm.learned) == ("LSTM", 1, 0.95, True)
    assert mamba.control == "model.string_accuracy_in_train_range ≥ 0.9"
    build_report([tmp_path], tmp_path / "report", "cmd")
    page = (tmp_path / "report" / "P4.md").read_text()
    assert "What was tried (the control: model.string_accuracy_in_train_range ≥ 0.9" in page
    assert "| Mamba | 3 | `search`, `seeds` | 0.550 |" in page
    assert "| LSTM | 1 | `lstm-search` | 0.950 (learned) |" in page
    objects = {o["id"]: o for o in json.loads((tmp_path / "report" / "findings.json").read_text())}
    assert objects["p4-gssm-fail-beyond"]["tried"][0]["settings"] == 3
    assert objects["p4-in-range"]["tried"] == []  # no run of it was set aside


def test_seeds_written_by_two_code_versions_are_one_setting(tmp_path):
    """An argument one code version writes as null and another as `{}` (or absent), or an override that sets a field
    to its preset's own value, does not split the seeds of one setting: three seeds a side still separate, and the
    verdict is not capped at fewer seeds. An override to another value does split them."""
    default = hf_icl.config_for("transformer", "tiny").position_embedding
    p5_pair(tmp_path / "mixed", "decision_tree", 0.30, 0.60, knn=1.5, spread=0.01)
    for name, seed, value in (("transformer", 1, {}), ("transformer", 2, []), ("mamba", 0, None)):
        file = tmp_path / "mixed" / f"{name}-s{seed}" / "metrics.json"
        metrics = json.loads(file.read_text())
        metrics["run_config"]["shared_overrides"] = value
        if seed == 2:
            metrics["run_config"]["overrides"] = {"position_embedding": default}
        file.write_text(json.dumps(metrics))
    other = "nope" if default != "nope" else "rope"
    split = find_runs([tmp_path / "mixed"])
    first = next(r for r in split if r.metrics["architecture"] == "transformer" and r.seed == 0)
    first.metrics["run_config"]["overrides"] = {"position_embedding": other}
    assert len({r.setting for r in split}) == 3
    result = rate_runs("p5-decision-tree", tmp_path / "mixed")
    assert result.seeds == {"Transformer": 3, "Mamba": 3}, result.reason
    assert result.verdict in ("reproduced", "direction only") and not result.why, result.reason


def test_a_pilot_on_fewer_seeds_neither_caps_nor_contradicts_three_seeds(tmp_path):
    """A one-seed pilot that disagrees sits beside a 3-seed experiment of the same pair: the 3-seed one decides and
    the pilot is listed as superseded. Without the 3-seed experiment, two disagreeing experiments stay inconclusive."""
    p5_pair(tmp_path / "pilot", "decision_tree", 0.60, 0.30, knn=1.5, seeds=1)  # the other way round, one seed
    p5_pair(tmp_path / "other_pilot", "decision_tree", 0.30, 0.60, knn=1.5, seeds=1)
    undecided = assess(FINDINGS["p5-decision-tree"], NUMBERS, find_runs([tmp_path / "pilot", tmp_path / "other_pilot"]))
    assert undecided.verdict == "inconclusive", undecided.reason
    p5_pair(tmp_path / "seeds", "decision_tree", 0.30, 0.60, knn=1.5, spread=0.01)
    result = assess(FINDINGS["p5-decision-tree"], NUMBERS, find_runs([tmp_path / "pilot", tmp_path / "seeds"]))
    assert result.verdict in ("reproduced", "direction only") and not result.why, result.reason
    assert result.seeds == {"Transformer": 3, "Mamba": 3}
    assert [line.where.split(";")[0] for line in result.lines] == ["`seeds`"]
    assert any(where == "`pilot`" and why.startswith("superseded") for where, _, why in result.others)


def test_a_parity_needs_its_interval_inside_the_tolerance(tmp_path):
    finding = FINDINGS["p5-relu-2nn-parity"]  # tolerance 0.05 on error_final
    close = assess(finding, NUMBERS, p5_pair(tmp_path / "close", "relu_2nn_regression", 0.30, 0.31, spread=0.005))
    assert close.verdict == "reproduced", close.reason
    noisy = assess(finding, NUMBERS, p5_pair(tmp_path / "noisy", "relu_2nn_regression", 0.30, 0.31, spread=0.08))
    assert noisy.verdict == "inconclusive" and noisy.why == "not separated", noisy.reason


def test_a_split_outcome_is_split_seeds_not_a_mean(tmp_path):
    """MambaFormer's sparse parity as committed (0.983, 0.989, 0.594): 2 of 3 seeds succeed."""
    for seed, accuracy in enumerate([0.99, 0.99, 0.99]):
        write_run(tmp_path / "sp" / f"mamba-s{seed}", "sparse_parity", "mamba", {"accuracy_final": accuracy}, seed=seed)
    for seed, accuracy in enumerate([0.983, 0.989, 0.594]):
        write_run(tmp_path / "sp" / f"mambaformer-s{seed}", "sparse_parity", "mambaformer",
                  {"accuracy_final": accuracy}, seed=seed)  # fmt: skip
    result = rate_runs("p5-sparse-parity-mamba", tmp_path)
    assert result.verdict == "inconclusive" and result.why == "split seeds", result.reason
    assert "split seeds (2 of 3 succeed)" in result.reason
    assert "2 of 3 seeds succeed: split (0.983, 0.989, 0.594)" in [line.ours for line in result.lines]


def test_a_contrast_with_a_missing_pair_is_partly_measured(tmp_path):
    """P4 "Hard-ALiBi ≫ NoPE/RoPE ≫ Mamba/LSTM" on Hard-ALiBi against RoPE alone."""
    alibi = {"position_embedding": "hard_alibi", "num_attention_heads": 8, "num_masked_heads": 4}
    copy_run(tmp_path / "copy" / "alibi", "transformer", 0.99, 0.95, overrides=alibi, seeds=3, spread=0.01)
    copy_run(tmp_path / "copy" / "rope", "transformer", 0.99, 0.10, overrides={"position_embedding": "rope"},
             seeds=3, spread=0.01)  # fmt: skip
    result = rate("p4-hard-alibi-beats", tmp_path)
    assert result.verdict == "inconclusive" and result.why == "partly measured", result.reason
    assert result.reason.startswith("partly measured (1 of 4 pairs): missing ")
    assert "NoPE" in result.reason and "Mamba" in result.reason and "LSTM" in result.reason
    assert [pair["measured"] for pair in result.pairs] == [False, True, False, False]


def _numbers_with(tmp_path, finding_id, criterion):
    data = yaml.safe_load(PAPER_NUMBERS.read_text(encoding="utf-8"))
    for item in data["findings"]:
        if item["id"] == finding_id:
            item["criterion"] = criterion
    path = tmp_path / "numbers.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return load_paper_numbers(path)


def test_a_criterion_the_zero_predictor_passes_is_refused(tmp_path):
    """The old many-outlier criterion, "below least squares on all pairs" (4.218), is met by predicting 0 (≈ 0.96):
    the report refuses to build; the shipped criterion (at most 0.5) is not, and builds."""
    facts = {"n_dims": 5, "n_points": 64, "options": {"p": 0.85}}
    for architecture in ("mamba", "mambaformer"):
        write_run(tmp_path / "runs" / "mo" / architecture, "many_outlier_regression", architecture,
                  {"error_final": 0.38}, test={"baselines": {"least_squares": {"error_final": 4.218}}},
                  task_facts=facts, seeds=3, spread=0.01)  # fmt: skip
    vacuous = {"metric": "model.error_final", "minus": "baselines.least_squares.error_final", "at_most": 0.0}
    numbers = _numbers_with(tmp_path, "p5-table1-outliers-learns", vacuous)
    with pytest.raises(ValueError, match="met by the zero predictor .* it cannot fail"):
        build_report([tmp_path / "runs"], tmp_path / "report", "cmd", numbers=numbers, draw=False)
    assert not (tmp_path / "report" / "REPORT.md").exists()
    build_report([tmp_path / "runs"], tmp_path / "report", "cmd", draw=False)
    rated = json.loads((tmp_path / "report" / "findings.json").read_text())
    assert {o["id"]: o["verdict"] for o in rated}["p5-table1-outliers-learns"] == "inconclusive"  # partly measured


def p2_parity(folder, in_range, test, steps, seeds=3):
    model = {"accuracy": test, "accuracy_in_train_range": in_range}
    write_run(folder, "parity_check", "regular_gpt", model, steps=steps, options={"train_max_length": 12},
              validation={"accuracy_in_train_range": in_range}, overrides={"dilated_attention_chunk_size": 2},
              seeds=seeds, spread=0.001)  # fmt: skip


def test_an_untrained_run_never_defines_a_number(tmp_path):
    """A longer RegularGPT parity run that never fitted parity in range (0.485) does not supersede the trained ones."""
    p2_parity(tmp_path / "revisits" / "regular_gpt", in_range=0.485, test=0.50, steps=6000, seeds=1)
    p2_parity(tmp_path / "table" / "regular_gpt", in_range=1.0, test=0.99, steps=4000)
    records = find_runs([tmp_path])
    line = number_lines(NUMBERS, [], records)["p2_table1/parity_check/regular_gpt_c2_avg"]
    assert line.ours.startswith("0.990") and "`table`" in line.where


def test_a_nan_validation_score_is_no_score(tmp_path):
    """A validation metric with no rows (P2's accuracy beyond the training lengths, on a split of training lengths
    only) is NaN: the selection falls back to the declared `select_on` score instead of comparing NaNs, so the setting
    that fits parity better in range is chosen, whichever is listed first."""
    for name, lr, in_range, test in (("a_worse", 3e-4, 0.60, 0.90), ("b_better", 1e-3, 1.0, 0.70)):
        write_run(tmp_path / "p2" / name, "parity_check", "regular_gpt",
                  {"accuracy": test, "accuracy_in_train_range": in_range}, lr=lr, options={"train_max_length": 12},
                  validation={"accuracy": float("nan"), "accuracy_in_train_range": in_range},
                  overrides={"dilated_attention_chunk_size": 2})  # fmt: skip
    entry = NUMBERS.entries["p2_table1/parity_check/regular_gpt_c2_avg"]
    settings = measured(entry, find_runs([tmp_path]))
    for order in (settings, settings[::-1]):
        pick = select(entry, order)
        assert pick.setting.runs[0].name == "b_better" and "accuracy_in_train_range" in pick.how, pick.how


@pytest.mark.parametrize(("search_in_range", "selected"), [(0.50, "seeded"), (0.60, "search")])
def test_validation_scores_within_the_tolerance_tie_and_the_most_seeds_win(tmp_path, search_in_range, selected):
    """A one-seed search point at chance (0.500 in range) does not displace a 3-seed setting at chance (0.492): the
    gap is within the tolerance (0.03), so the seeds decide. A search point clearly better (0.600) is selected."""
    entry = NUMBERS.entries["p2_table1/parity_check/regular_gpt_c2_avg"]
    for name, lr, in_range, seeds in (("seeded", 3e-4, 0.492, 3), ("search", 1e-3, search_in_range, 1)):
        write_run(tmp_path / "p2" / name, "parity_check", "regular_gpt",
                  {"accuracy": 0.5, "accuracy_in_train_range": in_range}, lr=lr, seeds=seeds,
                  options={"train_max_length": 12}, validation={"accuracy_in_train_range": in_range},
                  overrides={"dilated_attention_chunk_size": 2})  # fmt: skip
    pick = select(entry, measured(entry, find_runs([tmp_path])))
    assert pick.setting.runs[0].name.startswith(selected), pick.how


def test_a_run_over_the_budget_is_shown_but_never_the_evidence_alone(tmp_path):
    def mamba(name, accuracy, cpu_minutes, steps):
        write_run(tmp_path / name / "mamba", "regbench", "mamba", {"accuracy": accuracy, "tvd": 0.37}, steps=steps,
                  train={"steps": steps, "cpu_time_s": cpu_minutes * 60, "history": []},
                  run_config={"threads": 1, "n_train": 2500})  # fmt: skip

    mamba("long", 0.845, cpu_minutes=45, steps=3000)
    result = rate("p1-mamba", tmp_path)
    assert result.verdict == "inconclusive" and result.why == "over budget", result.reason
    mamba("short", 0.70, cpu_minutes=20, steps=1000)
    result = rate("p1-mamba", tmp_path)
    assert result.lines[0].ours == "0.700" and "`short`" in result.lines[0].where
    assert any("over budget" in why for _, _, why in result.others)


def test_findings_json_holds_seeds_pairs_and_separation(tmp_path):
    for architecture, tvd in (("transformer", 0.22), ("mamba", 0.37), ("retnet", 0.39), ("lstm", 0.56),
                              ("hyena", 0.49)):  # fmt: skip
        write_run(tmp_path / "runs" / "zoo" / architecture, "regbench", architecture, {"accuracy": 0.9, "tvd": tvd},
                  run_config={"n_train": 2500}, seeds=3, spread=0.005)  # fmt: skip
    build_report([tmp_path / "runs"], tmp_path / "report", "cmd", draw=False)
    rated = {o["id"]: o for o in json.loads((tmp_path / "report" / "findings.json").read_text())}
    assert len(rated) == len(NUMBERS.findings)
    contrast = rated["p1-transformer-beats-recurrent"]
    assert contrast["kind"] == "contrast" and contrast["seeds"] == {"Transformer": 3, "Mamba": 3, "RetNet": 3,
                                                                    "LSTM": 3, "Hyena": 3}  # fmt: skip
    assert [p["measured"] for p in contrast["pairs"]] == [True] * 4
    assert contrast["separation"]["method"] == "Welch t-test" and contrast["separation"]["p_value"] < 0.05
    assert contrast["runs"] and all(run.startswith("../runs/zoo/") for run in contrast["runs"])
    assert rated["p5-vector-mqar-table3"]["verdict"] == "not_run"
    summary = (tmp_path / "report" / "REPORT.md").read_text()
    counts = {v: sum(o["verdict"] == v for o in rated.values()) for v in ("reproduced", "not_run")}
    assert f"{len(rated)} findings ([findings.json](findings.json)): {counts['reproduced']} ✔ reproduced" in summary


def test_the_committed_findings_never_sign_on_too_few_seeds_or_a_missing_pair():
    from test_report import ROOT

    for o in json.loads((ROOT / "docs" / "results" / "findings.json").read_text(encoding="utf-8")):
        if o["verdict"] not in ("reproduced", "not_reproduced"):
            continue
        assert min(o["seeds"].values()) >= 3, o["id"]
        assert all(pair["measured"] for pair in o["pairs"]), o["id"]


def test_no_committed_finding_of_p2_to_p5_did_not_train_without_a_search():
    """Issue 51: a "did not train" verdict of P2-P5 lists what was tried, and each model that never met the control
    was tried at more than one setting (a committed search, not the recipe alone)."""
    from test_report import ROOT

    for o in json.loads((ROOT / "docs" / "results" / "findings.json").read_text(encoding="utf-8")):
        if o["why"] != "did not train" or o["paper"] == "P1":
            continue
        assert o["tried"], o["id"]
        assert all(t["settings"] >= 2 for t in o["tried"] if not t["learned"]), o["id"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(-5, 5, allow_nan=False), min_size=2, max_size=6),
    st.lists(st.floats(-5, 5, allow_nan=False), min_size=2, max_size=6),
)
def test_welch_matches_scipy(first, second):
    assume(min(statistics.variance(first), statistics.variance(second)) > 1e-6)  # no underflowing spread
    ours = welch(first, second)
    theirs = stats.ttest_ind(first, second, equal_var=False, alternative="greater")
    assert ours.statistic == pytest.approx(theirs.statistic, rel=1e-6, abs=1e-9)
    assert ours.p_value == pytest.approx(theirs.pvalue, rel=1e-6, abs=1e-9)


def test_welch_by_hand():
    """[1, 2, 3] against [0, 1, 2]: gap 1, se √(2/3), t = 1.2247 on 4 degrees of freedom, one-sided p = 0.1439."""
    result = welch([1, 2, 3], [0, 1, 2])
    assert result.gap == 1 and result.statistic == pytest.approx(1 / math.sqrt(2 / 3))
    assert result.p_value == pytest.approx(0.1439, abs=1e-4)
    assert result.interval[0] == pytest.approx(1 - 2.1318 * math.sqrt(2 / 3), abs=1e-3)  # t_0.95(4) = 2.1318
    no_spread = welch([1, 1, 1], [0, 0, 0])
    assert no_spread.p_value == 0 and math.isinf(no_spread.statistic)


def test_check_names_a_changed_or_invented_readme_number(tmp_path):
    from test_report import ROOT

    from hf_icl.report.check import prose_problems

    readme = tmp_path / "README.md"
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert not prose_problems(ROOT / "README.md", ROOT / "docs" / "results")
    claims = yaml.safe_load((ROOT / "docs" / "results" / "claims.yaml").read_text(encoding="utf-8"))["README.md"]
    cited = next(c["text"] for c in claims if c["text"].startswith("0.") and c["text"] in text)  # e.g. the quickstart's
    changed = cited[:-1] + str((int(cited[-1]) + 1) % 10)  # its last digit changed
    assert changed not in text
    readme.write_text(text.replace(cited, changed, 1), encoding="utf-8")
    problems = prose_problems(readme, ROOT / "docs" / "results")
    assert any("README.md:" in p and f"{changed} is cited in no committed file" in p for p in problems), problems
    readme.write_text(text + "\nThe model reaches 0.777 on a task.\n", encoding="utf-8")
    assert any("0.777 is cited in no committed file" in p for p in prose_problems(readme, ROOT / "docs" / "results"))


def test_check_fails_on_a_changed_metrics_file_a_finding_uses(tmp_path, monkeypatch, capsys):
    from hf_icl.report import main as report_main

    results = tmp_path / "results"
    for architecture, error in (("transformer", 0.30), ("mamba", 0.60)):
        write_run(results / "dt" / architecture, "decision_tree", architecture, {"error_final": error}, seeds=3,
                  spread=0.01, test={"baselines": {"3_nearest_neighbors": {"error_final": 1.0}}})  # fmt: skip
    build_report([results], results, "python -m hf_icl.report results --output results", draw=False)
    monkeypatch.chdir(tmp_path)  # no README.md here: the check reads the report folder alone
    assert report_main(["results", "--check"]) == {"problems": 0}
    file = results / "dt" / "mamba-s1" / "metrics.json"
    metrics = json.loads(file.read_text())
    metrics["test"]["model"]["error_final"] = 0.2  # a seed of the losing side now wins
    file.write_text(json.dumps(metrics))
    with pytest.raises(SystemExit) as stop:
        report_main(["results", "--check"])
    assert stop.value.code == 1
    err = capsys.readouterr().err
    assert "results/P5.md: line" in err and "results/findings.json" in err


def test_ones_own_sweep_gets_mean_sd_over_seeds_and_no_paper_findings(tmp_path):
    """A 2 × 2 sweep with 2 seeds per point: REPORT.md has one row per grid point with mean ± sd and n = 2, a figure
    with error bars (one test length is enough), and no paper pages unless --papers."""
    from hf_icl.report import main as report_main

    for architecture in ("transformer", "mamba"):
        for lr, accuracy in ((1e-3, 0.6), (3e-3, 0.8)):
            for seed in (0, 1):
                name = f"architecture={architecture},lr={lr},seed={seed}"
                write_run(tmp_path / "sweep" / name, "mqar", architecture, {"accuracy": accuracy + 0.02 * seed},
                          seed=seed, lr=lr, test={"per_length": {"64": accuracy + 0.02 * seed}})  # fmt: skip
    report_main([str(tmp_path / "sweep"), "--output", str(tmp_path / "report")])
    summary = (tmp_path / "report" / "REPORT.md").read_text()
    assert "| `architecture=mamba,lr=0.003` | `sweep` | mqar | mamba | 2 | 0.81 ± 0.014 |" in summary, summary
    assert "8 runs in 1 experiments" in summary and (tmp_path / "report" / "report_figures" / "settings.png").is_file()
    assert not (tmp_path / "report" / "P1.md").exists() and not (tmp_path / "report" / "findings.json").exists()
    report_main([str(tmp_path / "sweep"), "--output", str(tmp_path / "papers"), "--papers"])
    assert (tmp_path / "papers" / "P1.md").is_file() and (tmp_path / "papers" / "findings.json").is_file()


def test_a_report_killed_while_its_pages_are_put_in_place_is_recognised(tmp_path, monkeypatch, capsys):
    """The pages of one report are written as one step: a report that dies between two pages leaves its marker, the
    next report says so and rewrites every page, and --check names the marker."""
    from hf_icl.report import build as build_module
    from hf_icl.report import main as report_main
    from hf_icl.report.check import regeneration_problems

    out = tmp_path / "results"  # runs and pages in one folder, as in docs/results
    write_run(out / "exp" / "a", "regbench", "mamba", {"accuracy": 0.8, "tvd": 0.4})
    written = []
    real = build_module.write_text_atomic

    def dying(path, text):
        if len(written) == 3 and path.name != build_module.WRITING:
            raise KeyboardInterrupt  # a kill between two pages
        written.append(path)
        real(path, text)

    monkeypatch.setattr(build_module, "write_text_atomic", dying)
    with pytest.raises(KeyboardInterrupt):
        report_main([str(out), "--output", str(out), "--papers"])
    assert (out / build_module.WRITING).is_file()
    assert any("a report was interrupted" in p for p in regeneration_problems(out, None, "cmd"))
    monkeypatch.setattr(build_module, "write_text_atomic", real)
    capsys.readouterr()
    report_main([str(out), "--output", str(out), "--papers"])
    assert "the previous report was interrupted" in capsys.readouterr().err
    assert not (out / build_module.WRITING).exists() and (out / "REPORT.md").is_file() and (out / "runs.html").is_file()


def test_three_seeds_are_not_displaced_by_a_longer_run_on_one(tmp_path):
    """Of runs of one model, the longest-trained counts, but seeds come first: GLA + NGH on 3 seeds at 1,500 steps is
    the evidence, not one seed at 3,000 (which could only be capped at direction only); of two 3-seed settings, or
    two one-seed settings, the longer counts."""
    from test_report import regbench

    ngh = {"overrides": {"ngram_heads": [{"layer": 1, "orders": [1, 2, 3], "replace": False}]}}
    regbench(tmp_path / "a" / "seeded", "gla", 0.949, 0.212, steps=1500, epochs=19, seeds=3, spread=0.001, **ngh)
    regbench(tmp_path / "a" / "long", "gla", 0.949, 0.205, steps=3000, epochs=38, **ngh)
    result = rate_runs("p1-gla-ngh", tmp_path / "a")
    assert result.verdict == "reproduced" and result.seeds == {"GLA + NGH₁^(1,2,3)": 3}, result.reason
    assert [why for *_, why in result.others] == ["a run of the same model on 3 seeds counts instead"]
    regbench(tmp_path / "b" / "short", "gla", 0.60, 0.50, steps=1500, epochs=19, seeds=3, spread=0.001, **ngh)
    regbench(tmp_path / "b" / "long", "gla", 0.949, 0.205, steps=3000, epochs=38, seeds=3, spread=0.001, **ngh)
    result = rate_runs("p1-gla-ngh", tmp_path / "b")
    assert result.verdict == "reproduced" and result.scaled == [("epochs", 38.0, 200.0)], result.reason
    assert [why for *_, why in result.others] == ["a longer run of the same model counts instead"]
    regbench(tmp_path / "c" / "short", "gla", 0.60, 0.50, steps=1500, epochs=19, **ngh)
    regbench(tmp_path / "c" / "long", "gla", 0.949, 0.205, steps=3000, epochs=38, **ngh)
    result = rate_runs("p1-gla-ngh", tmp_path / "c")
    assert result.verdict == "direction only" and result.why == "1 seed", result.reason


def test_what_was_tried_names_the_models_where_they_are_a_table_s_columns():
    """P2 Table 1's rows are tasks and its columns models: the attempts name RegularGPT and the Transformer, not the
    task twice; P4's rows are the models."""
    from hf_icl.report.attempts import attempts

    p2 = attempts(FINDINGS["p2-modular-arithmetic"], NUMBERS, [])
    assert [a.model for a in p2] == ["RegularGPT C=2 (avg)", "Transformer (avg)"]
    assert [a.model for a in attempts(FINDINGS["p4-gssm-fail-beyond"], NUMBERS, [])] == ["Mamba", "LSTM"]
