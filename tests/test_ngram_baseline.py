"""In-context n-gram baselines (P1 Appendix C.1; DESIGN §5.3): hand cases, refit oracle, published figures."""

import importlib.util
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hf_icl
from hf_icl.baselines import InContextNGram
from hf_icl.baselines.ngram import context_counts, context_counts_reference
from hf_icl.evaluation import regbench_metrics
from hf_icl.tasks.regbench import RegBenchConfig, generate_regbench

_spec = importlib.util.spec_from_file_location(
    "_refit_ngram", Path(__file__).resolve().parents[1] / "benchmarks" / "_refit_ngram.py"
)
_refit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_refit)
refit_predict_proba = _refit.refit_predict_proba


def _rows(*dists: dict) -> np.ndarray:
    out = np.zeros((len(dists), 20))
    for i, d in enumerate(dists):
        for c, p in d.items():
            out[i, ord(c) - 96] = p
    return out


def test_hand_computed_paper_bigram():
    # "aab|a", n=2, padding "_":
    # after a:    ctx a, c(a)=1, nothing seen -> β=1, unseen {a} -> a=1
    # after aa:   ctx a, c(a)=2, c(aa)=1 -> a=1/2; no unseen letter: β=1/2 is lost
    # after aab:  ctx b, nothing seen -> unigram a:2/4, b:1/4 renormalised -> a=2/3, b=1/3
    # after aab|: ctx _, c(_)=2, c(_a)=1 -> a=1/2, β=1/2 -> b gets all of it
    expected = _rows({"a": 1}, {"a": 0.5}, {"a": 2 / 3, "b": 1 / 3}, {"a": 0.5, "b": 0.5})
    np.testing.assert_allclose(InContextNGram(2).predict_proba("aab|a"), expected)


def test_hand_computed_paper_trigram():
    # "aab|a", n=3, padding "__". After aab|: ctx __ (c=2), c(__a)=1 -> a=1/2, β3=1/2;
    # order 2 ctx _ (c=4), c(_a)=1 -> a=1/4, β2=3/4 -> b=3/4; so b = 1/2 · (3/4)/(3/4) = 1/2
    expected = _rows({"a": 1}, {"a": 1}, {"a": 2 / 3, "b": 1 / 3}, {"a": 0.5, "b": 0.5})
    np.testing.assert_allclose(InContextNGram(3).predict_proba("aab|a"), expected)


def test_hand_computed_normalized_and_unigram():
    expected = _rows({"a": 1}, {"a": 1}, {"a": 2 / 3, "b": 1 / 3}, {"a": 1})
    np.testing.assert_allclose(InContextNGram(2, "normalized").predict_proba("aab|a"), expected)
    unigram = _rows({"a": 1}, {"a": 1}, {"a": 2 / 3, "b": 1 / 3}, {"a": 2 / 3, "b": 1 / 3})
    for variant in ("paper", "normalized"):
        np.testing.assert_allclose(InContextNGram(1, variant).predict_proba("aab|a"), unigram)


def test_shapes_and_errors():
    assert InContextNGram(3).predict_proba("a").shape == (0, 20)
    with pytest.raises(ValueError, match="n=0 is not allowed"):
        InContextNGram(0)
    with pytest.raises(ValueError, match="variant='kn' is not one of: paper, normalized"):
        InContextNGram(2, "kn")
    with pytest.raises(ValueError, match="only a..r and '|'"):
        InContextNGram(2).predict_proba("ab.c")


@pytest.mark.parametrize("variant", ["paper", "normalized"])
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_matches_refit_oracle_on_regbench_instances(n, variant):
    cfg = RegBenchConfig(name="t", n_train=0, n_test=3, n_validation=0, seed=n, max_strings=12, max_length=15)
    for row in generate_regbench(cfg)["test"]:
        ours = InContextNGram(n, variant).predict_proba(row["text"])
        np.testing.assert_allclose(ours, refit_predict_proba(row["text"], n, variant), atol=1e-12)
        assert (ours >= 0).all() and (ours.sum(axis=1) <= 1 + 1e-12).all()
        if variant == "normalized":
            np.testing.assert_allclose(ours.sum(axis=1), 1.0)


@settings(max_examples=60, deadline=None)
@given(text=st.text(alphabet="abc|", min_size=1, max_size=30), n=st.integers(1, 4), normalized=st.booleans())
def test_matches_refit_oracle_on_arbitrary_strings(text, n, normalized):
    variant = "normalized" if normalized else "paper"
    np.testing.assert_allclose(
        InContextNGram(n, variant).predict_proba(text), refit_predict_proba(text, n, variant), atol=1e-12
    )


@settings(max_examples=80, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from("abcdefghijklmnopqr|"), min_size=1, max_size=60)
    | st.text(alphabet="ab|", min_size=1, max_size=60),
    n=st.integers(1, 6),
)
def test_compiled_context_counts_equal_the_python_pass(text, n):
    """The numba pass (n <= 5) against the Python reference, count for count; n = 6 takes the reference itself."""
    compiled, reference = context_counts(text, n), context_counts_reference(text, n)
    for ours, theirs in zip(compiled, reference):
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        np.testing.assert_array_equal(ours, theirs)


@pytest.fixture(scope="module")
def test_split(tmp_path_factory):
    return hf_icl.load_task("regbench", cache_dir=str(tmp_path_factory.mktemp("hf")), n_train=2500, seed=0)["test"]


def test_published_figures_on_n2500_test_split(test_split):
    rows = list(test_split)
    start = time.perf_counter()
    probs = {n: [InContextNGram(n).predict_proba(r["text"]) for r in rows] for n in (2, 3)}
    assert time.perf_counter() - start < 20.0  # 500 instances for n=2 and n=3; target < 10 s each
    two, three = regbench_metrics(probs[2], rows), regbench_metrics(probs[3], rows)
    assert 0.925 <= three["accuracy"] <= 0.945 and 0.245 <= three["tvd"] <= 0.265, three
    assert 0.815 <= two["accuracy"] <= 0.845 and 0.31 <= two["tvd"] <= 0.34, two
    normalized = regbench_metrics([InContextNGram(3, "normalized").predict_proba(r["text"]) for r in rows], rows)
    assert 0.925 <= normalized["accuracy"] <= 0.95 and 0.185 <= normalized["tvd"] <= 0.21, normalized
