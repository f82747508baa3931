"""`experiments/p2_seed_factors.py`: the rule of p2_parity_seed_factors.yaml on fabricated 3 x 3 tables, and the
study it writes from fabricated runs (kept out of the report's run scan, declared as a study)."""

import json
from pathlib import Path

import pytest
from script_loader import load_script

from hf_icl.report.runs import scan_runs
from hf_icl.report.studies import find_studies


@pytest.fixture(scope="module")
def factors():
    return load_script("experiments/p2_seed_factors.py")


def table(extrapolates):
    """{(S, D): cell} from a function of (S, D) to whether that run extrapolates."""
    return {(s, d): {"extrapolates": extrapolates(s, d)} for s in range(3) for d in range(3)}


def test_the_rule_names_what_the_outcome_follows(factors):
    assert factors.verdict(table(lambda s, d: s == 0)).startswith("initialisation")
    assert factors.verdict(table(lambda s, d: d != 1)).startswith("data order")
    assert factors.verdict(table(lambda s, d: s == d)).startswith("both")
    assert factors.verdict(table(lambda s, d: True)) == "neither: every run extrapolates"
    assert factors.verdict(table(lambda s, d: False)) == "neither: every run fails to extrapolate"


def fabricate_run(folder: Path, test: float, in_range: float) -> None:
    folder.mkdir(parents=True)
    metrics = {
        "train": {"steps": 4000, "cpu_time_s": 100.0}, "test": {"model": {"accuracy": test}},
        "validation": {"model": {"accuracy_in_train_range": in_range}}, "run_config": {}, "task": "parity_check",
    }  # fmt: skip
    (folder / "metrics.json").write_text(json.dumps(metrics))


def test_the_study_is_written_and_kept_out_of_the_findings_runs(factors, tmp_path):
    for s in range(3):
        for d in range(3):
            fabricate_run(tmp_path / "runs" / f"seed={s},data_seed={d}", 0.99 if s == 0 else 0.6, 1.0)
    out = tmp_path / "study"
    factors.main([str(tmp_path / "runs"), "--output", str(out)])
    record = json.loads((out / "seed_factors.json").read_text())
    assert record["extrapolate"] == 3 and record["fit_in_range"] == 9 and record["verdict"].startswith("initialis")
    assert "| S = 0 | ✔ 0.990 / 1.000 |" in (out / "README.md").read_text()
    (study,) = find_studies([out])
    assert "3 of 9 runs" in study.finding and study.evidence == ("seed_factors.json",)
    (out / "anchor_metrics.json").write_text((tmp_path / "runs/seed=0,data_seed=0/metrics.json").read_text())
    records, _ = scan_runs([out])
    assert [r.name for r in records] == ["anchor"]  # the study's copies (runs/*.json) are not training runs to it
