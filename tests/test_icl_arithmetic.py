"""ICL arithmetic (P3 App. D) and text mixture (P3 §4.1): formats, stored parameters, metric positions, the
least-squares baseline, determinism, training through the family, and the Hub-layout exports."""

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from datasets import load_dataset

import hf_icl
from hf_icl.tasks import load_task
from hf_icl.tasks.icl_arithmetic import (
    EXAMPLE,
    ICLArithmeticConfig,
    ICLArithmeticSampler,
    answer_positions,
    check_row,
    format_example,
    icl_arithmetic_tokenizer,
    least_squares_predictions,
    sample_rows,
)
from hf_icl.tasks.icl_arithmetic.evaluation import summarise
from hf_icl.tasks.text_mixture import TextMixtureConfig, sample_mixtures, split_documents, to_alphabet
from hf_icl.training import main

ROOT = Path(__file__).resolve().parents[1]
SMALL = dict(n_train=8, n_validation=4, n_test=16)


def test_example_format_is_the_papers():
    assert format_example(12, 23, 35, 3) == "012*023=+00035|"  # a = b = 1 (P3 §4.1)
    assert format_example(12, 23, math.trunc(0.5 * 12 - 1.5 * 23), 3) == "012*023=-00028|"  # a = 0.5, b = −1.5
    assert format_example(154, 709, 7058, 3) == "154*709=+07058|"  # P3 App. D
    assert format_example(1, 1, 0, 3) == "001*001=+00000|"


def test_rows_satisfy_their_stored_coefficients():
    splits = load_task("icl_arithmetic", **SMALL)
    for split in ("train", "validation", "test"):
        for row in splits[split]:
            assert check_row(row)
            tasks = row["text"].split("#")
            assert len(tasks) == 5 and tasks[-1] == "" and len(row["a"]) == len(row["b"]) == 4
            assert all(0 <= a < 10 for a in row["a"]) and all(-9 <= b < 10 for b in row["b"])
            for t, task in enumerate(tasks[:-1]):
                matches = list(EXAMPLE.finditer(task))
                assert len(matches) == 4 and "".join(m.group(0) for m in matches) == task
                for m in matches:  # recomputed here, independently of check_row
                    value = row["a"][t] * int(m.group(1)) + row["b"][t] * int(m.group(2))
                    assert int(m.group(3) + m.group(4)) == int(value)  # int() truncates toward zero
    broken = dict(splits["test"][0])
    broken["a"] = [broken["a"][0] + 1.0, *broken["a"][1:]]
    assert not check_row(broken)


def test_named_configs_and_determinism():
    default = load_task("icl_arithmetic", **SMALL)["test"]
    single = load_task("icl_arithmetic", config_name="single_task", **SMALL)["test"]
    assert {len(t) for t in default["text"]} == {244} and {len(t) for t in single["text"]} == {121}
    assert single[0]["text"].count("#") == 1 and single[0]["text"].count("|") == 8
    again = sample_rows(np.random.default_rng([0, 1]), 16, 4, 4, 3)
    assert [r["text"] for r in again] == default["text"]  # the bytes depend on the seed alone
    assert load_task("icl_arithmetic", **{**SMALL, "seed": 1})["test"]["text"] != default["text"]
    with pytest.raises(ValueError, match="n_ex=2 is not allowed"):
        load_task("icl_arithmetic", n_ex=2)


def test_answer_positions_are_the_digits_of_the_last_two_examples():
    config = ICLArithmeticConfig(name="x")
    text = sample_rows(np.random.default_rng(0), 1, 4, 4, 3)[0]["text"]
    positions = answer_positions(config)
    assert len(positions) == 4 * 2 * 5
    assert positions[:5].tolist() == [39, 40, 41, 42, 43]  # example 3 of task 1: 30 + len("AAA*BBB=±")
    assert all(text[p].isdigit() and text[p - 1 - k] in "+-" for p, k in zip(positions, [0, 1, 2, 3, 4] * 8))
    hits = np.zeros((2, 244), dtype=bool)
    hits[0, positions[:20]] = True  # half of the scored digits of one row of two
    metric, by_example = summarise(hits, config)
    assert metric["answer_accuracy"] == pytest.approx(0.25)
    assert by_example == pytest.approx([0.0, 0.0, 0.25, 0.25])


def test_least_squares_baseline_recovers_exact_coefficients():
    row = {"text": "".join(format_example(a, b, 2 * a + 3 * b, 3) for a, b in [(1, 2), (5, 1), (7, 9), (4, 4)]) + "#"}
    guess = least_squares_predictions(row, ICLArithmeticConfig(name="x", n_tasks=1))
    assert guess.split("|")[2:4] == ["007*009=+00041", "004*004=+00020"]  # (a, b) = (2, 3) from two examples
    assert guess.split("|")[0] == "001*002=+00000"  # nothing seen yet: 0


def test_online_sampler_tokens_decode_to_valid_rows():
    tokenizer = icl_arithmetic_tokenizer()
    sampler = ICLArithmeticSampler(ICLArithmeticConfig(name="x"), tokenizer.get_vocab())
    batch = sampler.sample_batch(3, np.random.default_rng(5))
    assert batch["input_ids"].shape == (3, 244) and torch.equal(batch["input_ids"], batch["labels"])
    expected = sample_rows(np.random.default_rng(5), 3, 4, 4, 3)
    assert tokenizer.batch_decode(batch["input_ids"]) == [r["text"] for r in expected]


def test_family_trains_and_evaluates_through_train_py(tmp_path):
    metrics = main(
        ["--task", "icl_arithmetic", "--architecture", "slowfast_transformer", "--preset", "tiny", "--max-steps", "3"]
        + ["--batch-size", "4", "--threads", "1", "--report-to", "none", "--task-option", "n_test=8"]
        + ["--task-option", "n_validation=2", "--output-dir", str(tmp_path / "run")]
    )
    assert set(metrics["test"]["model"]) == {"answer_accuracy"}
    assert metrics["test"]["baselines"]["least_squares"]["answer_accuracy"] > 0.5
    assert {"truncated_lm", "slow_change", "slow_diversity"} <= set(metrics["train"]["history"][-1])
    assert (tmp_path / "run" / "accuracy_by_example.png").is_file()


def run_script(name: str, argv: list[str]):
    """`python -m hf_icl.export <name> ...`, in-process."""
    from hf_icl.export import main as export_main

    return export_main([name, *argv])


def test_icl_arithmetic_export_loads_back(tmp_path):
    folder = run_script(
        "icl_arithmetic",
        ["--output", str(tmp_path / "out"), "--n-train", "4", "--n-validation", "2"] + ["--n-test", "3"],
    )
    card = (folder / "README.md").read_text()
    assert "config_name: single_task" in card and "last 2 examples" in card
    test = load_dataset(str(folder), "single_task", split="test")
    assert len(test) == 3 and all(check_row(row) for row in test)
    assert test.features["a"].feature.dtype == "float64"


def test_text_mixture_joins_two_documents_at_the_cut(tmp_path):
    documents = {"a.txt": "a" * 300, "b.txt": "b" * 300, "c.txt": "c" * 50}
    config = TextMixtureConfig(name="x", l_start=40, l_finish=60, l_max=100)
    rows = sample_mixtures(documents, sorted(documents), config, 20, np.random.default_rng(0))
    for row in rows:
        assert len(row["text"]) == 100 and 40 <= row["cut"] <= 60 and row["first"] != row["second"]
        assert row["text"] == row["first"][0] * row["cut"] + row["second"][0] * (100 - row["cut"])
    assert "c.txt" not in {r["first"] for r in rows} | {r["second"] for r in rows}  # shorter than l_max
    assert to_alphabet("tab\there — é") == "tab here ? ?"
    names = [f"d{i:02d}" for i in range(30)]
    splits = {s: split_documents(dict.fromkeys(names, ""), s) for s in ("train", "validation", "test")}
    assert sorted(sum(splits.values(), [])) == names and len(splits["test"]) == 3
    folder = tmp_path / "corpus"
    folder.mkdir()
    for i in range(12):
        (folder / f"doc{i}.txt").write_text(chr(ord("a") + i) * 200)
    rows = load_task("text_mixture", source=str(folder), l_start=20, l_finish=30, l_max=64, **SMALL)["train"]
    assert {len(t) for t in rows["text"]} == {64}


def test_text_mixture_offline_default_corpus_and_export(tmp_path):
    splits = load_task("text_mixture", config_name="short", **SMALL)
    row = splits["test"][0]
    assert len(row["text"]) == 128 and 48 <= row["cut"] <= 80 and row["first"] != row["second"]
    assert set(splits["train"]["first"]).isdisjoint(splits["test"]["first"])  # documents are split apart
    folder = run_script(
        "text_mixture",
        ["--output", str(tmp_path / "out"), "--configs", "short", "--n-train", "4"]
        + ["--n-validation", "2", "--n-test", "2"],
    )
    card = (folder / "README.md").read_text()
    assert "Python Software Foundation License" in card and "license_name: psf-2.0" in card
    assert len(load_dataset(str(folder), "short", split="train")) == 4
    assert "text_mixture" in hf_icl.list_tasks() and "icl_arithmetic" in hf_icl.list_tasks()
