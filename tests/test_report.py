"""The reproduction report: the papers' numbers and findings as data, the verdict rules on hand-made numbers, and the
findings rated from fabricated run folders (controls, scale, selection on validation, seeds, counted once), the CLI
(--collect, --readme, clean failures) and the committed report, which must equal its regeneration."""

import json
import os
import re
from pathlib import Path

import pytest

import hf_icl
from hf_icl.report import (
    Entry,
    assess,
    build_report,
    find_runs,
    judge_gap,
    judge_parity,
    judge_value,
    load_paper_numbers,
)
from hf_icl.report import main as report_main
from hf_icl.report.build import HEADLINE_END, HEADLINE_START, budget_minutes, over_budget, run_table

ROOT = Path(__file__).resolve().parents[1]
NUMBERS = load_paper_numbers()
FINDINGS = {f.id: f for f in NUMBERS.findings}


def entry(**fields):
    base = dict(id="s/r/c", paper="P", source="s", where="", row="r", column="c", task="regbench", match={},
                metric="model.tvd", value=0.392, better="lower", tolerance=0.03)  # fmt: skip
    return Entry(**{**base, **fields})


def test_paper_numbers_hold_the_published_values_and_findings():
    e = NUMBERS.entries
    assert e["p1_table1/gla-ngh123/tvd"].value == 0.207 and e["p1_table1/gla-ngh123/accuracy"].value == 0.946
    assert e["p1_baselines/3-gram (paper)/tvd"].metric == "baselines.3-gram (paper).tvd"
    assert "regenerates its own test automata" in e["p1_baselines/3-gram (paper)/tvd"].where
    assert e["p2_table1/parity_check/transformer_avg"].value == pytest.approx(0.501)  # printed as 50.1 (%)
    assert e["p2_table1/parity_check/regular_gpt_c2_max"].statistic == "max"
    assert e["p5_table3a/mamba/d64"].value == 0.723 and e["p5_table3a/mamba/d64"].scale == "log"
    assert e["p5_table1/sparse_parity/transformer"].value == "✗"
    assert sum(x.source == "p2_table1" for x in e.values()) == 12 * 8
    assert {x.task for x in e.values()} <= set(hf_icl.list_tasks())
    # Each published number appears once: the Transformer and RetNet of Fig. 2 are Table 1's rows.
    assert not any(k.startswith(("p1_fig2/transformer", "p1_fig2/retnet")) for k in e)
    assert len(FINDINGS) == len(NUMBERS.findings)  # ids are unique
    assert {f.paper for f in NUMBERS.findings} == {"P1", "P2", "P3", "P4", "P5"}
    assert NUMBERS.papers["P1"].arxiv == "2401.12973" and NUMBERS.papers["P5"].arxiv == "2402.04248"
    zipped = [("p1_table1/retnet-ngh123/accuracy", "p1_table1/retnet/accuracy"),
              ("p1_table1/gla-ngh123/accuracy", "p1_table1/gla/accuracy")]  # fmt: skip
    assert list(FINDINGS["p1-ngh-improves"].pairs) == zipped


@pytest.mark.parametrize(
    "change, message",
    [
        ({"kind": "guess"}, "kind='guess' is not one of: value, outcome, contrast, parity"),
        ({"kind": "parity", "between": ["p1_table1/gla/tvd"]}, "a parity needs `between`: two entry ids"),
        ({"paper": "P9"}, "paper='P9' is not one of: P1, P2, P3, P4, P5"),
        ({"entries": ["p1_table1/nope/tvd"]}, "entry 'p1_table1/nope/tvd' is not in"),
        ({"kind": "outcome"}, "an outcome needs expect: succeeds | fails and a criterion"),
    ],
)
def test_a_bad_finding_is_refused_naming_the_field(tmp_path, change, message):
    import yaml

    data = yaml.safe_load((ROOT / "hf_icl" / "report" / "paper_numbers.yaml").read_text(encoding="utf-8"))
    data["findings"][0].update(change)
    path = tmp_path / "numbers.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(message)):
        load_paper_numbers(path)


@pytest.mark.parametrize(
    "fields, measured, verdict",
    [
        ({}, 0.40, "reproduced"),  # |0.40 − 0.392| ≤ 0.03
        ({}, 0.50, "not reproduced"),  # no reference level: no "direction" for a single number
        ({"value": 1.0, "better": "higher", "reference": 0.5}, 0.80, "direction only"),  # above chance, like P2
        ({"value": 1.0, "better": "higher", "reference": 0.5}, 0.51, "not reproduced"),  # at chance
        ({"value": 0.523, "better": "higher", "reference": 0.5}, 0.4948, "reproduced"),
        ({"value": 0.723, "scale": "log", "tolerance": 1.0, "reference": 0.1}, 0.2, "reproduced"),  # 0.56 decades
        ({"value": 0.723, "scale": "log", "tolerance": 1.0, "reference": 0.1}, 0.01, "not reproduced"),
        ({"value": 1.54e-3, "scale": "log", "tolerance": 1.0, "reference": 0.1}, 0.05, "direction only"),
    ],
)
def test_number_verdicts(fields, measured, verdict):
    assert judge_value(entry(**fields), measured) == verdict


@pytest.mark.parametrize(
    "ours_better, ours_worse, verdict",
    [
        (0.230, 0.400, "reproduced"),  # gap 0.170 vs the paper's 0.175
        (0.260, 0.400, "direction only"),  # gap 0.140: clear, but 0.035 off
        (0.380, 0.400, "not reproduced"),  # gap 0.020 ≤ tolerance: no clear difference
        (0.450, 0.400, "not reproduced"),  # reversed
    ],
)
def test_contrast_verdicts(ours_better, ours_worse, verdict):
    better, worse = entry(value=0.217), entry(value=0.392)
    assert judge_gap(better, worse, ours_better, ours_worse) == verdict
    assert judge_gap(entry(value=None), worse, 0.23, 0.40) == "reproduced"  # an ordering without numbers


@pytest.mark.parametrize(
    "first, second, verdict",
    [
        (0.30, 0.34, "reproduced"),  # 0.04 apart, within the 0.05 of error_final
        (0.34, 0.30, "reproduced"),  # either side may lead
        (0.30, 0.36, "not reproduced"),  # 0.06 apart
        (0.36, 0.30, "not reproduced"),
    ],
)
def test_parity_verdicts(first, second, verdict):
    assert judge_parity(entry(tolerance=0.05), entry(tolerance=0.05), first, second) == verdict


def write_run(folder, task, architecture, model, *, seed=0, steps=3000, epochs=None, overrides=None, lr=3e-3,
              validation=None, facts=None, options=None, seeds=1, spread=0.0, **extra):  # fmt: skip
    """A run folder as train.py writes it, with only what the report reads. With `seeds=n`, n run folders
    `<folder>-s<i>` of one setting whose model numbers are the given ones plus (i − (n − 1) / 2) · spread (so their
    mean is the given number and their sd `spread` for n = 3)."""
    if seeds > 1:
        for i in range(seeds):
            shift = (i - (seeds - 1) / 2) * spread
            moved = {k: v + shift if isinstance(v, float) else v for k, v in model.items()}
            write_run(folder.with_name(f"{folder.name}-s{i}"), task, architecture, moved, seed=i, steps=steps,
                      epochs=epochs, overrides=overrides, lr=lr, validation=validation, facts=facts, options=options,
                      **json.loads(json.dumps(extra)))  # fmt: skip
        return
    metrics = {
        "task": task, "architecture": architecture, "preset": "tiny", "num_parameters": 1000,
        "test": {"model": model, **({"task_facts": facts} if facts else {}), **extra.pop("test", {})},
        "train": {"steps": steps, "epochs": epochs, "wall_time_s": 60.0, "history": []},
        "run_config": {"architecture": architecture, "task": task, "seed": seed, "lr": lr, "max_steps": steps,
                       "overrides": overrides or {}, "task_options": options or {}, "output_dir": str(folder),
                       **extra.pop("run_config", {})},
        **extra,
    }  # fmt: skip
    if validation is not None:
        metrics["validation"] = {"model": validation}
    folder.mkdir(parents=True)
    (folder / "metrics.json").write_text(json.dumps(metrics))
    (folder / "summary.md").write_text("# run\n")


def copy_run(folder, architecture, in_range, beyond, **kwargs):
    model = {"string_accuracy_in_train_range": in_range, "string_accuracy_beyond_train": beyond}
    write_run(folder, "copy", architecture, model, options={"train_max_length": 20}, **kwargs)


def rate(finding_id, root):
    return assess(FINDINGS[finding_id], NUMBERS, find_runs([root]))


def test_a_failure_backed_by_a_model_that_did_not_learn_in_range_is_inconclusive(tmp_path):
    """P4: "Mamba copies nothing beyond the training length" needs a Mamba that copies in range."""
    copy_run(tmp_path / "copy" / "mamba", "mamba", in_range=0.0, beyond=0.0)
    result = rate("p4-gssm-fail-beyond", tmp_path)
    assert result.verdict == "inconclusive" and result.reason.startswith("did not train")
    assert any("did not train" in why for _, _, why in result.others)
    copy_run(tmp_path / "copy2" / "mamba", "mamba", in_range=0.97, beyond=0.0, seeds=3)  # learned in range
    result = rate("p4-gssm-fail-beyond", tmp_path)  # for Mamba; the claim names the LSTM too
    assert result.verdict == "inconclusive" and result.reason.startswith("partly measured"), result.reason
    copy_run(tmp_path / "copy2" / "lstm", "lstm", in_range=0.95, beyond=0.0, seeds=3)
    result = rate("p4-gssm-fail-beyond", tmp_path)
    assert result.verdict == "reproduced" and result.seeds == {"Mamba": 3, "LSTM": 3}, result.reason


def test_a_contrast_needs_both_sides_to_have_learned_in_range(tmp_path):
    """P2 even pairs: a RegularGPT that never fitted the task in range neither shows nor refutes that it extrapolates
    better than the Transformer; once it fits it in range, the same gap beyond the range is rated."""

    def p2_run(folder, architecture, in_range, test):
        model = {"accuracy": test, "accuracy_in_train_range": in_range}
        write_run(folder, "even_pairs", architecture, model, validation={"accuracy_in_train_range": in_range},
                  overrides={"dilated_attention_chunk_size": 2} if architecture == "regular_gpt" else {},
                  options={"train_max_length": 12}, seeds=3, spread=0.005)  # fmt: skip

    p2_run(tmp_path / "table" / "transformer", "transformer", in_range=0.92, test=0.55)
    p2_run(tmp_path / "table" / "regular_gpt", "regular_gpt", in_range=0.43, test=0.49)
    result = rate("p2-even-pairs", tmp_path)
    assert result.verdict == "inconclusive" and result.reason.startswith("did not train"), result.reason
    p2_run(tmp_path / "table2" / "transformer", "transformer", in_range=0.92, test=0.55)
    p2_run(tmp_path / "table2" / "regular_gpt", "regular_gpt", in_range=0.99, test=0.49)
    assert rate("p2-even-pairs", tmp_path).verdict == "not reproduced"


def test_a_failure_needs_the_contrasting_model_to_succeed_in_the_same_experiment(tmp_path):
    """P5: "the Transformer fails sparse parity" counts only where Mamba or MambaFormer learned it in that run."""
    parity = {"accuracy_final": 0.52}
    write_run(tmp_path / "a" / "transformer", "sparse_parity", "transformer", parity, seeds=3)
    write_run(tmp_path / "a" / "mamba", "sparse_parity", "mamba", {"accuracy_final": 0.53})
    write_run(tmp_path / "b" / "mamba", "sparse_parity", "mamba", {"accuracy_final": 0.99})  # another experiment
    assert rate("p5-sparse-parity-transformer-fails", tmp_path).verdict == "inconclusive"
    write_run(tmp_path / "a" / "mambaformer", "sparse_parity", "mambaformer", {"accuracy_final": 0.98})
    assert rate("p5-sparse-parity-transformer-fails", tmp_path).verdict == "reproduced"


def test_a_scaled_run_is_rated_scaled_with_its_scale(tmp_path):
    """Vector MQAR with 8 of the paper's 32 pairs is never rated as the paper's setting."""
    facts = {"n_pairs": 8, "n_queries": 16}
    write_run(tmp_path / "mqar" / "transformer", "vector_mqar", "transformer", {"error_mean": 0.02}, facts=facts,
              seeds=3)  # fmt: skip
    write_run(tmp_path / "mqar" / "mambaformer", "vector_mqar", "mambaformer", {"error_mean": 0.01}, facts=facts,
              seeds=3)  # fmt: skip
    result = rate("p5-vector-mqar-solved", tmp_path)
    assert result.verdict == "reproduced" and result.scaled
    out = tmp_path / "report"
    build_report([tmp_path / "mqar"], out, "cmd")
    row = next(line for line in (out / "REPORT.md").read_text().splitlines() if "#p5-vector-mqar-solved" in line)
    assert "✔ reproduced, scaled (3,000 of 300,000 steps; 8 of 32 key–value pairs)" in row
    # At the paper's setting (32 pairs, 300,000 steps) the same numbers are not scaled.
    write_run(tmp_path / "full" / "transformer", "vector_mqar", "transformer", {"error_mean": 0.02}, steps=300000,
              facts={"n_pairs": 32, "n_queries": 16}, seeds=3)  # fmt: skip
    write_run(tmp_path / "full" / "mambaformer", "vector_mqar", "mambaformer", {"error_mean": 0.01}, steps=300000,
              facts={"n_pairs": 32, "n_queries": 16}, seeds=3)  # fmt: skip
    result = rate("p5-vector-mqar-solved", tmp_path)
    assert result.verdict == "reproduced" and not result.scaled  # the paper's setting is preferred


def regbench(folder, architecture, accuracy, tvd, **kwargs):
    model = {"accuracy": accuracy, "tvd": tvd}
    baselines = {"3-gram (paper)": {"accuracy": 0.9342, "tvd": 0.2597}, "2-gram (paper)": {"accuracy": 0.8198,
                 "tvd": 0.3310}, "1-gram (paper)": {"accuracy": 0.4626, "tvd": 0.6323}}  # fmt: skip
    run_config = {"n_train": 2500, **kwargs.pop("run_config", {})}
    write_run(folder, "regbench", architecture, model, run_config=run_config,
              test={"num_rows": 500, "baselines": baselines}, **kwargs)  # fmt: skip


def test_settings_are_selected_on_validation_and_report_their_test_number(tmp_path):
    # lr 1e-3 is better on validation, worse on test: it is the one selected, and its test number reported.
    regbench(tmp_path / "zoo" / "lr1e-3", "retnet", 0.78, 0.41, lr=1e-3, validation={"accuracy": 0.80, "tvd": 0.40})
    regbench(tmp_path / "zoo" / "lr3e-3", "retnet", 0.81, 0.39, lr=3e-3, validation={"accuracy": 0.70, "tvd": 0.50})
    result = rate("p1-retnet", tmp_path)
    assert [line.ours for line in result.lines] == ["0.780", "0.410"]
    assert "lr1e-3" in result.lines[0].where and "best validation accuracy of 2 settings" in result.lines[0].where


def test_without_validation_numbers_settings_are_never_picked_on_test(tmp_path):
    regbench(tmp_path / "zoo" / "lr1e-3", "retnet", 0.78, 0.41, lr=1e-3, seeds=3)
    regbench(tmp_path / "zoo" / "lr3e-3", "retnet", 0.60, 0.55, lr=3e-3, seeds=3)
    result = rate("p1-retnet", tmp_path)  # one setting reproduces, the other does not: no choice on test
    assert result.verdict == "inconclusive" and "disagree" in result.reason and "not selected" in result.reason
    assert {why for _, _, why in result.others} == {"reproduced; not selected", "not reproduced; not selected"}
    # Settings that agree give their common verdict without naming one.
    regbench(tmp_path / "zoo2" / "lr1e-4", "lstm", 0.60, 0.55, lr=1e-4, seeds=3)
    regbench(tmp_path / "zoo2" / "lr1e-2", "lstm", 0.58, 0.57, lr=1e-2, seeds=3)
    result = rate("p1-lstm", tmp_path)
    assert result.verdict == "reproduced" and "2 settings without validation numbers agree" in result.lines[0].where


def test_lengths_beyond_training_are_selected_on_the_in_range_validation_accuracy(tmp_path):
    """Validation holds the training lengths only: copy settings are chosen on its string accuracy, never on the
    test's beyond-range number."""

    def hard_alibi(name, in_range, beyond, validation, masked):
        overrides = {"position_embedding": "hard_alibi", "num_attention_heads": 8, "num_masked_heads": masked}
        copy_run(tmp_path / "copy" / name, "transformer", in_range, beyond, overrides=overrides,
                 validation={"string_accuracy": validation})  # fmt: skip

    hard_alibi("m2", 0.97, 0.05, 0.90, masked=2)
    hard_alibi("m4", 0.98, 0.77, 0.99, masked=4)
    result = rate("p4-hard-alibi-beyond", tmp_path)
    assert "m4" in result.lines[0].where and "best validation string_accuracy of 2 settings" in result.lines[0].where
    assert result.lines[0].ours == "0.770"
    hard_alibi("m6", 0.96, 0.02, 0.995, masked=6)  # best on validation, worst beyond the training lengths
    result = rate("p4-hard-alibi-beyond", tmp_path)
    assert "m6" in result.lines[0].where and result.lines[0].ours == "0.020"


def test_a_longer_run_of_the_same_model_supersedes_a_shorter_one(tmp_path):
    regbench(tmp_path / "short" / "mamba", "mamba", 0.60, 0.55, steps=1000)
    regbench(tmp_path / "long" / "mamba", "mamba", 0.84, 0.37, steps=3000, seeds=3)
    result = rate("p1-mamba", tmp_path)
    assert result.verdict == "reproduced" and result.lines[0].ours.startswith("0.840 ± 0.000 (3 seeds)")
    assert [why for _, _, why in result.others] == ["a longer run of the same model counts instead"]


def test_how_long_a_model_trained_counts_sequences_not_steps(tmp_path):
    """4,000 steps at batch 256 saw more data than 12,000 at batch 64: the first is the longer run."""
    regbench(tmp_path / "b64" / "mamba", "mamba", 0.60, 0.55, steps=12000, run_config={"batch_size": 64})
    regbench(tmp_path / "b256" / "mamba", "mamba", 0.84, 0.37, steps=4000, run_config={"batch_size": 256})
    result = rate("p1-mamba", tmp_path)
    assert result.lines[0].ours == "0.840" and "b256" in result.lines[0].where
    assert [where for where, _, _ in result.others] == ["`b64` / `mamba`"]


def test_seeds_give_mean_and_sd_with_the_tolerance_beside_them(tmp_path):
    for seed, accuracy in enumerate([0.83, 0.85, 0.87]):
        regbench(tmp_path / "zoo" / f"mamba-s{seed}", "mamba", accuracy, 0.37, seed=seed)
    line = rate("p1-mamba", tmp_path).lines[0]
    assert line.ours == "0.850 ± 0.020 (3 seeds)" and line.tolerance == "±0.03" and line.verdict == "reproduced"


def test_a_run_argument_added_later_does_not_split_the_seeds_of_a_setting(tmp_path):
    """A run made after a new run argument existed records it as null (not given); a run made before has no key.
    Both are the same setting, so their seeds are one mean."""
    for seed, accuracy in enumerate([0.83, 0.85, 0.87]):
        later = {"run_config": {"max_train_minutes": None}} if seed == 2 else {}
        regbench(tmp_path / "zoo" / f"mamba-s{seed}", "mamba", accuracy, 0.37, seed=seed, **later)
    line = rate("p1-mamba", tmp_path).lines[0]
    assert line.ours == "0.850 ± 0.020 (3 seeds)"


def test_a_default_written_out_or_an_old_spelling_does_not_split_the_seeds_of_a_setting(tmp_path):
    """A newer code version writes an argument at its default (`augment: false`, `batching: grouped`) where an older
    one wrote nothing, and an older one wrote `train_on_delimiter` at the top level where a newer one writes it as a
    task option: the same setting, one mean. A value other than the default still splits the seeds."""
    writes = [
        {"run_config": {"train_on_delimiter": True}},  # the old spelling
        {"run_config": {"augment": False, "batching": "grouped", "task_options": {"train_on_delimiter": True}}},
        {"run_config": {"allow_changed_settings": False, "task_options": {"train_on_delimiter": True}}},
    ]
    for seed, (accuracy, extra) in enumerate(zip([0.83, 0.85, 0.87], writes)):
        regbench(tmp_path / "zoo" / f"mamba-s{seed}", "mamba", accuracy, 0.37, seed=seed, **extra)
    assert rate("p1-mamba", tmp_path).lines[0].ours == "0.850 ± 0.020 (3 seeds)"
    file = tmp_path / "zoo" / "mamba-s2" / "metrics.json"
    metrics = json.loads(file.read_text())
    metrics["run_config"]["augment"] = True
    file.write_text(json.dumps(metrics))
    assert len({r.setting for r in find_runs([tmp_path / "zoo"])}) == 2


def test_an_old_top_level_task_option_is_dropped_where_the_task_never_read_it():
    from hf_icl.report.runs import normalized_arguments

    assert normalized_arguments({"task": "text_lm", "train_on_delimiter": True, "lr": 0.003}) == {
        "task": "text_lm", "lr": 0.003,
    }  # fmt: skip
    moved = normalized_arguments({"task": "regbench", "train_on_delimiter": True})  # regbench: the default task
    assert moved == {"task_options": {"train_on_delimiter": True}}


def test_a_contrast_is_judged_within_one_experiment_and_a_failure_side_needs_the_control(tmp_path):
    # 1,000 steps: the Transformer has not passed the 2-gram baseline, so this experiment cannot show who fails.
    regbench(tmp_path / "short" / "transformer", "transformer", 0.55, 0.62, steps=1000)
    regbench(tmp_path / "short" / "mamba", "mamba", 0.79, 0.42, steps=1000)
    result = rate("p1-transformer-beats-recurrent", tmp_path)
    assert result.verdict == "inconclusive" and result.reason.startswith("did not train")
    regbench(tmp_path / "long" / "transformer", "transformer", 0.92, 0.24, seeds=3, spread=0.005)
    regbench(tmp_path / "long" / "mamba", "mamba", 0.84, 0.34, seeds=3, spread=0.005)
    result = rate("p1-transformer-beats-recurrent", tmp_path)  # one of the four recurrent models measured
    assert result.verdict == "inconclusive" and result.reason.startswith("partly measured (1 of 4 pairs): missing ")
    assert "Transformer vs LSTM (tvd)" in result.reason and result.why == "partly measured"
    for architecture, tvd in (("retnet", 0.40), ("lstm", 0.56), ("hyena", 0.49)):
        regbench(tmp_path / "long" / architecture, architecture, 0.7, tvd, seeds=3, spread=0.005)
    result = rate("p1-transformer-beats-recurrent", tmp_path)
    assert result.verdict == "direction only" and "`long`" in result.reason  # gap 0.10 against the paper's 0.162
    assert [line.label for line in result.lines][0] == "Transformer vs Mamba (tvd)"
    assert all(pair["measured"] for pair in result.pairs) and len(result.pairs) == 4


def test_the_summary_counts_each_finding_once(tmp_path):
    """Three experiments measure the same baselines and the same model: each finding still counts once."""
    for experiment in ("a", "b", "c"):
        regbench(tmp_path / experiment / "gla-ngh", "gla", 0.946, 0.207, seeds=3,
                 overrides={"ngram_heads": [{"layer": 1, "orders": [1, 2, 3], "replace": False}]})  # fmt: skip
    counts = build_report([tmp_path], tmp_path / "report", "cmd")
    p1 = [f for f in NUMBERS.findings if f.paper == "P1"]
    assert sum(counts["P1"].values()) == len(p1)
    assert counts["P1"]["reproduced"] == 2  # the baselines (once, not three times) and GLA + NGH
    summary = (tmp_path / "report" / "REPORT.md").read_text()
    row = next(line for line in summary.splitlines() if line.startswith("| [P1](P1.md) |"))
    assert row.split(" | ")[1:4] == [str(len(p1)), "2", "0"]


def test_report_cli_collects_writes_pages_and_the_readme_table(tmp_path):
    regbench(tmp_path / "outputs" / "zoo" / "mamba", "mamba", 0.84, 0.37)
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{HEADLINE_START}\nSTALE-TABLE\n{HEADLINE_END}\n\nafter\n")
    out = tmp_path / "report"
    counts = report_main([str(tmp_path / "outputs"), "--output", str(out), "--collect", str(tmp_path / "committed"),
                          "--readme", str(readme)])  # fmt: skip
    assert counts["runs"] == 1 and (tmp_path / "committed" / "zoo" / "mamba" / "summary.md").is_file()
    for page in ("REPORT", "P1", "P2", "P3", "P4", "P5", "runs"):
        assert (out / f"{page}.md").is_file() and (out / f"{page}.html").is_file()
    markdown = (out / "REPORT.md").read_text()
    assert f"`python -m hf_icl.report {tmp_path / 'committed'} --output {out}`" in markdown
    p1 = (out / "P1.md").read_text()
    assert "| Mamba · accuracy | 0.845 | 0.840 | ±0.03 | direction only |" in p1  # within the tolerance, one seed
    assert "![Fig. 2b–c: paper and ours (error bars: sd over seeds)](report_figures/p1_fig2.png)" in p1
    assert (out / "report_figures" / "p1_fig2.png").is_file()
    html = (out / "P1.html").read_text()
    assert "<img alt='Fig. 2b–c: paper and ours (error bars: sd over seeds)' src='report_figures/p1_fig2.png'>" in html
    assert "href='P2.html'" in html and ".md" not in re.sub(r"<code>.*?</code>", "", html)
    text = readme.read_text()
    assert "STALE-TABLE" not in text and text.endswith(f"{HEADLINE_END}\n\nafter\n")
    assert "[details](report/P1.md#p1-mamba)" in text


def test_report_fails_cleanly_without_runs(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        report_main([str(tmp_path / "missing"), "--output", str(tmp_path / "out")])
    assert exit_info.value.code == 2 and "no metrics.json here or below" in capsys.readouterr().err


def test_the_committed_report_and_the_readme_table_equal_their_regeneration():
    """`python -m hf_icl.report docs/results --output docs/results --readme README.md` was run after the last change
    to the runs, the papers' numbers or the rules: every generated page, findings.json, the README's findings table
    and the README's cited numbers match (`python -m hf_icl.report docs/results --check`, which CI also runs)."""
    from hf_icl.report.check import check

    command = "python -m hf_icl.report docs/results --output docs/results"
    problems = check(ROOT / "docs" / "results", ROOT / "README.md", command)
    assert not problems, f"rerun `{command} --readme README.md`:\n" + "\n".join(problems)


def test_a_readme_without_the_headline_block_is_refused_before_any_work(tmp_path, capsys):
    regbench(tmp_path / "runs" / "zoo" / "mamba", "mamba", 0.84, 0.37)
    readme = tmp_path / "README.md"
    readme.write_text("# no block here\n")
    with pytest.raises(SystemExit) as exit_info:
        report_main([str(tmp_path / "runs"), "--output", str(tmp_path / "out"), "--readme", str(readme)])
    assert exit_info.value.code == 2 and "has no <!-- headline findings: start -->" in capsys.readouterr().err
    assert not (tmp_path / "out").exists() and readme.read_text() == "# no block here\n"


def test_a_report_built_from_more_runs_is_not_replaced_by_a_smaller_one(tmp_path, capsys):
    for name in ("mamba", "lstm"):
        regbench(tmp_path / "all" / "zoo" / name, name, 0.7, 0.5)
    out = tmp_path / "out"
    assert report_main([str(tmp_path / "all"), "--output", str(out)])["runs"] == 2
    before = (out / "REPORT.md").read_text()
    with pytest.raises(SystemExit) as exit_info:  # one run only, as when --collect is forgotten
        report_main([str(tmp_path / "all" / "zoo" / "mamba"), "--output", str(out)])
    assert exit_info.value.code == 2 and "was built from 2 runs and these arguments hold 1" in capsys.readouterr().err
    assert (out / "REPORT.md").read_text() == before
    counts = report_main([str(tmp_path / "all" / "zoo" / "mamba"), "--output", str(out), "--allow-fewer-runs"])
    assert counts["runs"] == 1


GARBAGE = {
    "not_json": ("{oops", "not readable JSON (JSONDecodeError"),
    "a_list": ("[1, 2]", "holds a list, not a mapping"),
    "no_test": ('{"train": {"steps": 1}}', "test is missing, not a mapping"),
    "test_list": ('{"train": {}, "test": [1]}', "test is a list, not a mapping"),
    "config_list": ('{"train": {}, "test": {}, "run_config": [1]}', "run_config is a list, not a mapping"),
    "model_text": ('{"train": {}, "test": {"model": "good"}}', "test.model is a str, not a mapping"),
    "task_number": ('{"train": {}, "test": {}, "task": 3}', "task=3 is not a string"),
    "an_eval": ('{"test": {}, "eval_config": {}}', "an evaluation's metrics"),
}


def garbage_runs(root: Path) -> list[str]:
    for name, (text, _) in GARBAGE.items():
        (root / name).mkdir(parents=True)
        (root / name / "metrics.json").write_text(text)
    return [str(root / name) for name in GARBAGE]


def test_every_skipped_metrics_file_is_named_with_its_reason(tmp_path, capsys):
    """Garbage metrics.json files were skipped without a word; a wrong-shaped one raised AttributeError."""
    regbench(tmp_path / "runs" / "zoo" / "mamba", "mamba", 0.84, 0.37)
    garbage_runs(tmp_path / "runs" / "zoo")
    assert report_main([str(tmp_path / "runs"), "--output", str(tmp_path / "out")])["runs"] == 1
    err = capsys.readouterr().err
    for name, (_, reason) in GARBAGE.items():
        line = next(line for line in err.splitlines() if f"{name}{os.sep}metrics.json" in line)
        assert line.startswith("skipped ") and reason in line, line


def test_only_garbage_never_replaces_a_report_nor_leaves_folders(tmp_path, capsys):
    regbench(tmp_path / "runs" / "zoo" / "mamba", "mamba", 0.84, 0.37)
    out = tmp_path / "out"
    report_main([str(tmp_path / "runs"), "--output", str(out)])
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    garbage = garbage_runs(tmp_path / "garbage")
    for output in (out, tmp_path / "fresh" / "report"):
        capsys.readouterr()
        with pytest.raises(SystemExit) as exit_info:  # even where fewer runs are allowed
            report_main([*garbage, "--output", str(output), "--allow-fewer-runs"])
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert exit_info.value.code == 2 and "argument runs: no training run to report" in last, last
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert not (tmp_path / "fresh").exists()


def test_a_report_that_fails_midway_leaves_no_empty_folders(tmp_path, monkeypatch):
    import hf_icl.report.build as build

    regbench(tmp_path / "runs" / "zoo" / "mamba", "mamba", 0.84, 0.37)

    def broken(*args, **kwargs):
        raise RuntimeError("a bug in a figure")

    monkeypatch.setattr(build, "write_pages", broken)
    with pytest.raises(RuntimeError):
        build_report([tmp_path / "runs"], tmp_path / "new" / "report", "cmd")
    assert not (tmp_path / "new").exists()


def test_collect_names_the_files_it_does_not_copy(tmp_path, capsys):
    regbench(tmp_path / "outputs" / "zoo" / "mamba", "mamba", 0.84, 0.37)
    garbage_runs(tmp_path / "outputs" / "zoo")
    argv = [str(tmp_path / "outputs"), "--output", str(tmp_path / "out"), "--collect", str(tmp_path / "committed")]
    assert report_main(argv)["runs"] == 1
    skipped = [line for line in capsys.readouterr().err.splitlines() if line.startswith("skipped ")]
    assert len(skipped) == len(GARBAGE) and all(str(tmp_path / "outputs") in line for line in skipped)


def arithmetic_run(folder, architecture, answer, by_example, **kwargs):
    write_run(folder, "icl_arithmetic", architecture, {"answer_accuracy": answer}, options={"digits": 1},
              test={"by_example": {"model": by_example}}, **kwargs)  # fmt: skip


def test_an_outcome_criterion_can_judge_a_difference_of_two_test_numbers(tmp_path):
    """P3 "uses its context": the 4th example of a task minus the 1st, at least 0.2."""
    arithmetic_run(tmp_path / "p3" / "baseline", "transformer", 0.776, [0.445, 0.549, 0.753, 0.799], seeds=3)
    arithmetic_run(tmp_path / "p3" / "ymodel", "slowfast_transformer", 0.30, [0.30, 0.31, 0.30, 0.31], seeds=3)
    result = rate("p3-uses-context", tmp_path)
    assert [line.ours.split(":")[0] for line in result.lines] == ["3 of 3 seeds succeed", "0 of 3 seeds succeed"]
    assert result.verdict == "not reproduced" and "4th − 1st example accuracy ≥ 0.2" in result.reason
    assert "Baseline Transformer (6 layers, d = 112, 7 heads) 3 of 3 seeds succeed" in result.reason
    assert "operand digits" in " ".join(label for label, *_ in result.scaled)


def regression_run(folder, architecture, error_final, seeds=3):
    write_run(folder, "linear_regression", architecture, {"error_final": error_final},
              facts={"n_dims": 5}, run_config={"batch_size": 256}, seeds=seeds, spread=0.001)  # fmt: skip


def test_a_claim_about_several_models_is_not_shown_by_one_of_them(tmp_path):
    """"The Transformer, Mamba and MambaFormer learn linear regression": the Transformer alone does not show it, a
    Transformer that fails refutes it."""
    regression_run(tmp_path / "lr" / "transformer", "transformer", 0.03)
    result = rate("p5-linear-regression", tmp_path)
    assert result.verdict == "inconclusive" and result.reason.startswith("partly measured: ")
    assert "2 of 3 numbers not measured" in result.reason
    regression_run(tmp_path / "lr" / "mamba", "mamba", 0.02)
    regression_run(tmp_path / "lr" / "mambaformer", "mambaformer", 0.01)
    assert rate("p5-linear-regression", tmp_path).verdict == "reproduced"
    failing = tmp_path / "only_failing"
    regression_run(failing / "lr" / "transformer", "transformer", 0.5)
    assert rate("p5-linear-regression", failing).verdict == "not reproduced"


def p5_pair(folder, task, transformer, mamba, knn=1.0, seeds=3, spread=0.005):
    """The runs of one P5 Table 1 experiment: a Transformer and a Mamba with these final errors (3 seeds each by
    default, sd `spread`), 3-NN's beside."""
    for architecture, error in (("transformer", transformer), ("mamba", mamba)):
        write_run(folder / architecture, task, architecture, {"error_final": error}, seeds=seeds, spread=spread,
                  test={"baselines": {"3_nearest_neighbors": {"error_final": knn}}})  # fmt: skip
    return find_runs([folder])


def test_a_parity_needs_both_models_to_have_learned(tmp_path):
    """P5 ✓ ✓: Mamba on par with the Transformer on 2NN regression counts only where a model beat 3-NN by 0.1 in
    that experiment; two models that learned nothing tie, and that is no evidence. One that learned beside one that
    did not, at the same budget, is a gap."""
    finding = FINDINGS["p5-relu-2nn-parity"]

    def rate_pair(name, transformer, mamba, knn=1.0):
        return assess(finding, NUMBERS, p5_pair(tmp_path / name, "relu_2nn_regression", transformer, mamba, knn))

    result = rate_pair("untrained", 0.99, 0.98)
    assert result.verdict == "inconclusive" and result.reason.startswith("did not train"), result.reason
    result = rate_pair("apart", 0.30, 0.45)
    assert result.verdict == "not reproduced" and "apart by more than the tolerance" in result.reason, result.reason
    assert [line.label for line in result.lines] == ["Transformer vs Mamba (2NN regression)"]
    result = rate_pair("close", 0.30, 0.33)
    assert result.verdict == "reproduced" and "on par within the tolerance" in result.reason, result.reason
    assert rate_pair("barely", 0.30, 0.33, knn=0.35).verdict == "inconclusive"  # 0.05 below 3-NN: not learned
    result = rate_pair("one_learned", 1.10, 0.11)
    assert result.verdict == "not reproduced" and "apart by more than the tolerance" in result.reason, result.reason


def test_a_p5_table1_contrast_needs_the_winning_model_to_have_learned(tmp_path):
    """Orthogonal outliers: a Transformer at 0.99 (predicting 0 scores 1.0) shows no win for or against Mamba; once
    it learned, its win counts, also over a Mamba that learned nothing (the same budget and data)."""
    finding = FINDINGS["p5-orthogonal-outlier"]

    def rate_pair(name, transformer, mamba):
        return assess(finding, NUMBERS, p5_pair(tmp_path / name, "orthogonal_outlier_regression", transformer, mamba))

    result = rate_pair("untrained", 0.99, 0.95)
    assert result.verdict == "inconclusive" and result.reason.startswith("did not train"), result.reason
    assert rate_pair("both_learned", 0.20, 0.40).verdict == "reproduced"
    assert rate_pair("only_the_winner", 0.20, 0.99).verdict == "reproduced"
    assert rate_pair("no_gap", 0.60, 0.58).verdict == "not reproduced"


def test_the_runs_table_names_n_gram_heads_beside_the_architecture(tmp_path):
    """A Transformer with P1's n-gram heads is not listed as a plain Transformer on the runs page."""
    heads = [{"layer": 1, "orders": [1, 2, 3], "replace": False}, {"layer": -2, "orders": [1], "replace": True}]
    write_run(tmp_path / "exp" / "plain", "regbench", "transformer", {"accuracy": 0.9})
    write_run(tmp_path / "exp" / "ngh", "regbench", "transformer", {"accuracy": 0.95}, overrides={"ngram_heads": heads})
    header, rows = run_table(find_runs([tmp_path]))
    column = header.index("architecture")
    assert {row[0]: row[column] for row in rows} == {"`ngh`": "transformer+ngh1.123+nghr-2.1", "`plain`": "transformer"}


def test_the_runs_page_marks_runs_over_the_cpu_budget(tmp_path):
    """A one-thread run counts its CPU time, a two-thread run its time on both cores; a run without CPU time is
    neither timed nor flagged."""

    def timed_run(name, cpu_s, threads):
        write_run(tmp_path / "exp" / name, "regbench", "transformer", {"accuracy": 0.9},
                  run_config={"threads": threads})  # fmt: skip
        metrics_file = tmp_path / "exp" / name / "metrics.json"
        metrics = json.loads(metrics_file.read_text())
        if cpu_s is not None:
            metrics["train"]["cpu_time_s"] = cpu_s
        metrics_file.write_text(json.dumps(metrics))

    timed_run("one_thread_over", 1900.0, 1)
    timed_run("two_threads_within", 3000.0, 2)  # 25 minutes on 2 cores
    timed_run("one_thread_within", 1700.0, 1)
    timed_run("untimed", None, 1)
    records = {r.name: r for r in find_runs([tmp_path])}
    assert budget_minutes(records["two_threads_within"]) == 25.0
    assert budget_minutes(records["untimed"]) is None
    assert [r.name for r in over_budget(list(records.values()))] == ["one_thread_over"]
    header, rows = run_table(list(records.values()))
    minutes = {row[0]: row[header.index("CPU min")] for row in rows}
    assert minutes == {"`one_thread_over`": "31.7 (over)", "`two_threads_within`": "50.0",
                       "`one_thread_within`": "28.3", "`untimed`": "–"}  # fmt: skip
    build_report([tmp_path], tmp_path / "report", "cmd")
    page = (tmp_path / "report" / "runs.md").read_text()
    assert "1 of 3 runs that recorded their CPU time" in page and "`one_thread_over` (32 min)" in page


def test_a_contrast_is_scaled_by_each_side_s_own_setting(tmp_path):
    """The Transformer against the in-context 3-gram baseline: the baseline's number is read from whichever run
    validated best (here a GLA run that trained 19 epochs), but a baseline does not train, so only the Transformer's
    25 epochs scale the verdict (not "19–25 of 200 epochs")."""
    regbench(tmp_path / "zoo" / "transformer", "transformer", 0.90, 0.25, epochs=25, seeds=3, spread=0.01,
             validation={"accuracy": 0.85, "tvd": 0.30})  # fmt: skip
    regbench(tmp_path / "zoo" / "gla", "gla", 0.80, 0.40, epochs=19, seeds=3, spread=0.01,
             validation={"accuracy": 0.95, "tvd": 0.20})  # fmt: skip
    result = rate("p1-transformer-beats-3gram", tmp_path)
    assert result.scaled == [("epochs", 25.0, 200.0)], result.scaled
