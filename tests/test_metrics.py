"""RegBench metrics on hand-computed cases, and the offline ``evaluate`` module (DESIGN §2.3, §5.2)."""

import os

import numpy as np
import pytest

from hf_icl.evaluation import REGBENCH_METRIC_PATH, regbench_metrics
from hf_icl.evaluation.metrics import accuracy, tvd

PROBS = [[0.1, 0.6, 0.3], [0.5, 0.25, 0.25], [0.2, 0.2, 0.6]]
TRUTH = [[0.0, 0.5, 0.5], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]

# 0 -a-> 1, 0 -b-> 0 (a self-loop, as minimisation can create), 1 -a-> 0
ROW = {
    "text": "ba|a",
    "start_state": 0,
    "transitions": [
        {"src": 0, "symbol": "a", "dst": 1},
        {"src": 0, "symbol": "b", "dst": 0},
        {"src": 1, "symbol": "a", "dst": 0},
    ],
}


def test_accuracy_and_tvd_literals():
    # argmax = [1, 0, 2]; truth there = [0.5, 0.0, 0.0]
    assert accuracy(PROBS, TRUTH) == pytest.approx(1 / 3)
    # rows: (0.1 + 0.1 + 0.2) / 2 = 0.2, (0.5 + 0.75 + 0.25) / 2 = 0.75, (0.8 + 0.2 + 0.6) / 2 = 0.8
    assert tvd(PROBS, TRUTH) == pytest.approx((0.2 + 0.75 + 0.8) / 3)
    assert accuracy(TRUTH, TRUTH) == 1.0 and tvd(TRUTH, TRUTH) == 0.0


def test_larger_model_vocabulary_pads_truth():
    probs = [[0.0, 0.4, 0.0, 0.6], [0.0, 0.9, 0.1, 0.0]]  # 4 columns vs 3 in the truth
    truth = [[0.0, 1.0, 0.0], [0.0, 1.0, 0.0]]
    assert accuracy(probs, truth) == 0.5  # row 0 argmax is the padded column
    assert tvd(probs, truth) == pytest.approx((0.6 + 0.1) / 2)


def test_ties_take_first_index_and_shapes_are_checked():
    assert accuracy([[0.5, 0.5]], [[1.0, 0.0]]) == 1.0
    assert accuracy([[0.5, 0.5]], [[0.0, 1.0]]) == 0.0
    with pytest.raises(ValueError, match="probs.shape=\\(1, 2\\) does not match truth.shape=\\(1, 3\\)"):
        accuracy([[0.5, 0.5]], [[0.0, 1.0, 0.0]])
    with pytest.raises(ValueError, match="same number of positions"):
        tvd([[0.5, 0.5]], [[0.0, 1.0], [0.0, 1.0]])


def test_regbench_metrics_micro_average():
    row1 = {**ROW, "text": "ba|a"}  # truth: after b {a, b}; after ba {a}; after ba| {a, b}
    row2 = {**ROW, "text": "aab"}  # truth: after a {a}; after aa {a, b}
    probs1 = np.zeros((3, 20))
    probs1[0, 1] = 1.0  # correct, tvd 0.5
    probs1[1, 1] = 1.0  # correct, tvd 0
    probs1[2, 19] = 1.0  # '|' is never true: wrong, tvd 1
    probs2 = np.zeros((2, 20))
    probs2[0, 1] = 1.0  # correct, tvd 0
    probs2[1, [1, 2]] = 0.5  # correct, tvd 0
    out = regbench_metrics([probs1, probs2], [row1, row2])
    assert out == {"accuracy": pytest.approx(4 / 5), "tvd": pytest.approx(1.5 / 5)}
    with pytest.raises(ValueError, match="len\\(probs\\)=1 does not match len\\(rows\\)=2"):
        regbench_metrics([probs1], [row1, row2])


def test_evaluate_module_offline_matches_plain_functions(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_EVALUATE_OFFLINE", "1")
    import evaluate

    assert os.path.isfile(os.path.join(REGBENCH_METRIC_PATH, "regbench.py"))
    metric = evaluate.load(REGBENCH_METRIC_PATH)
    rng = np.random.default_rng(0)
    preds = [rng.dirichlet(np.ones(20), size=t) for t in (5, 9, 1)]
    refs = [rng.dirichlet(np.ones(20), size=t) * (rng.random((t, 20)) < 0.3) for t in (5, 9, 1)]
    out = metric.compute(predictions=[p.tolist() for p in preds], references=[r.tolist() for r in refs])
    # float64 features: identical to the plain functions, ties included
    assert out["accuracy"] == accuracy(np.concatenate(preds), np.concatenate(refs))
    assert out["tvd"] == pytest.approx(tvd(np.concatenate(preds), np.concatenate(refs)), abs=1e-12)
    literal = metric.compute(predictions=[PROBS], references=[TRUTH])
    assert literal == {"accuracy": pytest.approx(1 / 3), "tvd": pytest.approx(1.75 / 3)}
