"""Learned n-gram reweighting (P1 App. D): features by hand and by brute force, save/load, training, the command."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import hf_icl.analysis.__main__ as analysis_main
from hf_icl.analysis import lnw as lnw_command
from hf_icl.baselines import LearnedNgramReweighting
from hf_icl.baselines.lnw import VARIANTS, featurise, mean_loss, ngram_features, train_lnw
from hf_icl.tasks import task_builder
from hf_icl.tasks.regbench import REGBENCH_VOCAB, next_token_truth
from hf_icl.utils.validation import CommandLineParser


def vec(entries: dict[str, float]) -> list[float]:
    """A 20-vector in REGBENCH_VOCAB order from {symbol: value}."""
    out = [0.0] * 20
    for symbol, value in entries.items():
        out[REGBENCH_VOCAB.index(symbol)] = value
    return out


# "ab|ab", row i after reading text[: i + 1]; blocks (unigram, after x_i, after x_{i-1} x_i), history padded "||".
#   i=0 "a":    a1 | after a: nothing yet | after "|a": nothing yet ("||a" only)
#   i=1 "ab":   a1 b1 | after b: - | after "ab": -
#   i=2 "ab|":  a1 b1 |1 | after "|": a1 (the padded "|a") | after "b|": -
#   i=3 "ab|a": a2 b1 |1 | after a: b1 | after "|a": b1 (the padded "|ab")
HAND_COUNTS = [
    ({"a": 1}, {}, {}),
    ({"a": 1, "b": 1}, {}, {}),
    ({"a": 1, "b": 1, "|": 1}, {"a": 1}, {}),
    ({"a": 2, "b": 1, "|": 1}, {"b": 1}, {"b": 1}),
]
HAND_FREQUENCIES = [
    ({"a": 1.0}, {}, {}),
    ({"a": 0.5, "b": 0.5}, {}, {}),
    ({"a": 1 / 3, "b": 1 / 3, "|": 1 / 3}, {"a": 1.0}, {}),
    ({"a": 0.5, "b": 0.25, "|": 0.25}, {"b": 1.0}, {"b": 1.0}),
]
HAND_EXISTENCE = [
    ({"a": 1}, {}, {}),
    ({"a": 1, "b": 1}, {}, {}),
    ({"a": 1, "b": 1, "|": 1}, {"a": 1}, {}),
    ({"a": 1, "b": 1, "|": 1}, {"b": 1}, {"b": 1}),
]


@pytest.mark.parametrize(
    "variant, rows", [("counts", HAND_COUNTS), ("frequencies", HAND_FREQUENCIES), ("existence", HAND_EXISTENCE)]
)
def test_features_match_hand_computed_case(variant, rows):
    expected = np.array([vec(uni) + vec(bi) + vec(tri) for uni, bi, tri in rows], dtype=np.float32)
    np.testing.assert_allclose(ngram_features("ab|ab", variant), expected, rtol=1e-6)


def brute_force(text: str, variant: str, order: int = 3) -> np.ndarray:
    """O(T²) recount: for each prefix, every n-gram of the "|"-padded prefix whose context matches the last n−1."""
    blocks = []
    for n in range(1, order + 1):
        padded = "|" * (n - 1) + text
        counts = np.zeros((len(text) - 1, 20))
        for i in range(len(text) - 1):
            context = padded[i + 1 : i + n]
            for j in range(i + 1):
                if padded[j : j + n - 1] == context:
                    counts[i, REGBENCH_VOCAB.index(padded[j + n - 1])] += 1
        if variant == "frequencies":
            totals = counts.sum(1, keepdims=True)
            counts = np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0)
        elif variant == "existence":
            counts = (counts > 0).astype(float)
        blocks.append(counts)
    return np.concatenate(blocks, axis=1)


@settings(max_examples=60, deadline=None)
@given(text=st.text(alphabet="abcr|", min_size=1, max_size=40), variant=st.sampled_from(VARIANTS))
def test_features_equal_brute_force(text, variant):
    features = ngram_features(text, variant)
    assert features.shape == (len(text) - 1, 60)
    np.testing.assert_allclose(features, brute_force(text, variant), rtol=1e-6, atol=1e-7)


def test_bad_inputs_name_the_field():
    with pytest.raises(ValueError, match="variant='ratio' is not one of: counts, frequencies, existence"):
        ngram_features("ab", "ratio")
    with pytest.raises(ValueError, match="text contains"):
        ngram_features("aZ", "counts")
    with pytest.raises(ValueError, match="variant="):
        LearnedNgramReweighting("ratio")


@pytest.fixture(scope="module")
def rows():
    builder = task_builder("regbench", n_train=16, n_validation=4, n_test=4)
    builder.download_and_prepare()
    splits = builder.as_dataset()
    return {name: [dict(r) for r in splits[name]] for name in ("train", "validation", "test")}


@pytest.mark.parametrize("variant", VARIANTS)
def test_save_load_round_trips_predictions(tmp_path, rows, variant):
    torch.manual_seed(0)
    model = LearnedNgramReweighting(variant, hidden_size=32).eval()
    text = rows["test"][0]["text"]
    probs = model.predict_proba(text)
    assert probs.shape == next_token_truth(rows["test"][0]).shape
    np.testing.assert_allclose(probs.sum(1), 1.0)
    model.save_pretrained(tmp_path / variant)
    assert json.loads((tmp_path / variant / "config.json").read_text())["variant"] == variant
    loaded = LearnedNgramReweighting.from_pretrained(tmp_path / variant)
    np.testing.assert_array_equal(loaded.predict_proba(text), probs)


def test_training_decreases_the_loss(rows):
    split = featurise([r["text"] for r in rows["validation"]], "frequencies")
    initial, _ = train_lnw("frequencies", rows["train"], epochs=0, hidden_size=64)
    trained, history = train_lnw(
        "frequencies", rows["train"], rows["validation"], epochs=3, batch_size=4, hidden_size=64
    )
    assert len(history) == 3 and history[-1]["train_loss"] < history[0]["train_loss"]
    assert mean_loss(trained, split) < mean_loss(initial, split)


def test_masking_delimiter_targets():
    split = featurise(["ab|a"], "counts", train_on_delimiter=False)
    assert split.targets.tolist() == [REGBENCH_VOCAB.index("b"), -100, REGBENCH_VOCAB.index("a")]


def lnw_main(argv: list[str]) -> dict:
    """What `python -m hf_icl.analysis lnw ...` does (parse, check before any work, run), for this command alone."""
    parser = CommandLineParser(prog="python -m hf_icl.analysis lnw")
    lnw_command.add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        lnw_command.check_arguments(args)
    except ValueError as err:
        parser.fail(err)
    return lnw_command.run(args)


def test_command_is_registered():
    analysis_main.discover()
    assert analysis_main.ANALYSES["lnw"] is lnw_command


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--variant", "ratio"], "argument --variant: invalid choice: 'ratio' (choose from 'counts', 'frequencies'"),
        (["--preset", "gpu"], "argument --preset: invalid choice: 'gpu' (choose from 'paper', 'cpu')"),
        (["--epochs", "0"], "argument --epochs: epochs=0 is not allowed: expected an integer >= 1"),
        (["--n-train", "0"], "argument --n-train:"),
        (["--max-rows", "-1"], "argument --max-rows: max_rows=-1 is not allowed"),
        (["--epochs", "2", "--preset", "cpu"], "argument --preset: not allowed with argument --epochs"),
    ],
)
def test_bad_flags_fail_before_any_work(tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        lnw_main([*argv, "--output", str(tmp_path / "out")])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_command_runs_end_to_end(tmp_path):
    out = tmp_path / "lnw"
    results = lnw_main(["--n-train", "16", "--epochs", "1", "--max-rows", "4", "--output", str(out)])
    saved = json.loads((out / "metrics.json").read_text())
    assert set(saved["lnw"]) == set(VARIANTS) and saved["rows"] == {"train": 4, "validation": 4, "test": 4}
    assert (out / "lnw_loss_curves.png").stat().st_size > 0
    assert "3-gram (paper)" in saved["baselines"]
    test = lnw_command.regbench_rows(16, 4)["test"]
    for variant in VARIANTS:
        assert 0 <= saved["lnw"][variant]["accuracy"] <= 1 and 0 <= saved["lnw"][variant]["tvd"] <= 1
        model = LearnedNgramReweighting.from_pretrained(out / variant)
        rescored = lnw_command.regbench_metrics([model.predict_proba(r["text"]) for r in test], test)
        assert rescored == pytest.approx({k: results["lnw"][variant][k] for k in ("accuracy", "tvd")})
