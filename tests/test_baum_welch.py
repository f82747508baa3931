"""In-context Baum–Welch HMM (P1 Algorithm 2, App. C.2–C.4; DESIGN §5.8): masks, per-prefix oracle, EM, CLI."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hf_icl.analysis.__main__ import main as analysis_main
from hf_icl.baselines import BaumWelch, InContextNGram
from hf_icl.baselines import baum_welch as baum_welch_module
from hf_icl.baselines.baum_welch import EPS, initial_parameters, letter_ids, start_mask, transition_mask
from hf_icl.evaluation import regbench_metrics
from hf_icl.tasks.regbench.evaluation import evaluate_regbench

_spec = importlib.util.spec_from_file_location(
    "_baum_welch_reference", Path(__file__).resolve().parents[1] / "benchmarks" / "_baum_welch_reference.py"
)
_reference = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_reference)
reference_predict_proba, reference_fit = _reference.reference_predict_proba, _reference.reference_fit
reference_em_step, reference_forward_backward = _reference.reference_em_step, _reference.reference_forward_backward

strings = st.text(alphabet="abcd", min_size=1, max_size=7)
texts = st.lists(strings, min_size=1, max_size=4).map("|".join)
# the compiled kernel (optional dependency) and the torch path; "numba" is skipped where numba is missing
BACKENDS = [
    pytest.param("numba", marks=pytest.mark.skipif(baum_welch_module._baum_welch_numba is None, reason="no numba")),
    "torch",
]


def test_transition_mask_matches_appendix_c3():
    # M = 3, state (i, j) = 3i + j. Free: (i, j) -> (j, k) for i != j, any k; rows (i, i) have none.
    expected = {1: {3, 4, 5}, 2: {6, 7, 8}, 3: {0, 1, 2}, 5: {6, 7, 8}, 6: {0, 1, 2}, 7: {3, 4, 5}}
    mask = transition_mask(3)
    assert {int(row): set(np.flatnonzero(mask[row]).tolist()) for row in np.flatnonzero(mask.any(1))} == expected
    full = transition_mask(12)  # the paper's 144 states
    assert full.shape == (144, 144) and full.sum() == 132 * 12
    assert full[1 * 12 + 2, 2 * 12 + 5] and full[1 * 12 + 2, 2 * 12 + 2]  # (1,2) -> (2,5), (1,2) -> (2,2)
    assert not full[1 * 12 + 2, 3 * 12 + 5]  # (1,2) -> (3,5): the shared state differs
    assert not full[2 * 12 + 2].any()  # (2,2) -> anything: no self-repeat


def test_start_mask_and_cold_start_match_appendix_c4():
    assert np.flatnonzero(start_mask(3)).tolist() == [1, 2]  # (0,1), (0,2)
    assert np.flatnonzero(start_mask(12)).tolist() == list(range(1, 12))
    a, b, pi = initial_parameters(12, seed=0)
    np.testing.assert_allclose([a.sum(1), b.sum(1)], 1, atol=1e-12)
    free, other = 11 * (1 + EPS), (144 - 11) * EPS  # π ∝ 1 + ε on (0, j), j ≠ 0, and ε elsewhere
    assert pi[1:12].sum() == pytest.approx(free / (free + other)) and np.ptp(pi[1:12]) == 0 == np.ptp(pi[12:])
    masked = np.where(~transition_mask(12), a, np.nan)  # every masked entry of a row is ε / Z_row
    np.testing.assert_allclose(np.nanmax(masked, 1), np.nanmin(masked, 1), rtol=1e-12)
    np.testing.assert_allclose(a[2 * 12 + 2], 1 / 144)  # a row with no free entry is uniform
    assert (np.nanmax(masked[~np.eye(12, dtype=bool).ravel()], 1) < 1e-4).all()


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=12, deadline=None)
@given(text=texts.map(lambda t: t + "a"), m=st.sampled_from([2, 3]), warm=st.booleans())
def test_matches_per_prefix_reference_on_small_strings(backend, text, m, warm):
    ours = BaumWelch(m, warm_start=warm, backend=backend).predict_proba(text)
    np.testing.assert_allclose(ours, reference_predict_proba(text, m, warm_start=warm), atol=1e-8)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("warm", [False, True])
def test_matches_reference_with_the_papers_144_states(warm, backend):
    text = "abcab|bcab|ca|abca|b"
    ours = BaumWelch(warm_start=warm, backend=backend).predict_proba(text)
    np.testing.assert_allclose(ours, reference_predict_proba(text, warm_start=warm), atol=1e-8)


@settings(max_examples=10, deadline=None)
@given(
    text=st.lists(st.text(alphabet="abcdefghijklmnopqr", min_size=1, max_size=9), min_size=1, max_size=5).map("|".join),
    m=st.sampled_from([2, 3, 5, 12]),  # 12: the unrolled steps of the paper's 144 states; others: the loop forms
    warm=st.booleans(),
    separator=st.booleans(),
)
@example(text="a|bcdaba", m=5, warm=True, separator=False)  # EM iterations amplified rounding to 2.3e-10 here
@example(text="onocol|bmbcadbpr", m=3, warm=True, separator=False)  # and to 1.3e-8 (relative) in a log-likelihood
@example(text="cda|fcae|bb|aaa", m=12, warm=True, separator=False)  # and to 5.7e-7 (relative) at -10.2
@example(text="pbed|aa|bfg|ccd", m=5, warm=True, separator=False)  # and to 3.0e-7 in a probability
def test_numba_kernel_equals_the_torch_path(text, m, warm, separator):
    pytest.importorskip("numba")
    text += "|" if separator else "a"
    fast, slow = (BaumWelch(m, warm_start=warm, backend=backend) for backend in ("numba", "torch"))
    # Each prefix runs EM for many iterations, which amplifies the kernels' different summation orders (seen: 2.3e-10
    # in a probability; 9.5e-10, then 1.6e-7 = 1.3e-8 relative at -12.56, then 5.5e-6 = 5.7e-7 relative at -9.69, in a
    # fitted log-likelihood; then 3.0e-7 in a probability, 2 of 340, at m = 5): after many iterations, predictions to
    # 1e-6 and fitted log-likelihoods to 1e-6 relative (a sum over the string of the log of the fitted model's
    # probabilities, each the end of many EM iterations). The tight oracle is the one without that amplifier: with 0
    # or 1 iterations, below, both agree to 1e-10, and each backend matches the reference on small strings to 1e-8.
    np.testing.assert_allclose(fast.predict_proba(text), slow.predict_proba(text), rtol=0, atol=1e-6)
    np.testing.assert_allclose(fast.fit_log_likelihoods(text), slow.fit_log_likelihoods(text), rtol=1e-6, atol=1e-8)
    for few in (0, 1):  # the cold start's prediction; the shared first E-step only
        fast, slow = (BaumWelch(m, num_iterations=few, backend=backend) for backend in ("numba", "torch"))
        np.testing.assert_allclose(fast.predict_proba(text), slow.predict_proba(text), rtol=0, atol=1e-10)


def test_batch_equals_one_by_one_and_float32_is_close():
    batch = ["ab|ba|abc", "abcab|bca|cab|a", "cc|ab", "a", "ba"]
    model, single = BaumWelch(3, batch_size=2), BaumWelch(3, dtype=torch.float32)
    for text, probs in zip(batch, model.predict_proba_batch(batch)):
        np.testing.assert_allclose(probs, model.predict_proba(text), atol=1e-12)
        np.testing.assert_allclose(single.predict_proba(text), probs, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=8, deadline=None)
@given(text=texts.map(lambda t: t + "b"), m=st.sampled_from([3, 12]))
def test_em_iterations_do_not_decrease_the_likelihood(backend, text, m):
    letters = sum(map(len, letter_ids(text[:-1])))
    for eps in (EPS, 1e-10):
        history = BaumWelch(m, eps=eps, backend=backend).fit_log_likelihoods(text)  # (iterations + 1, K)
        # Exact EM never decreases log P(O); the ε pseudo-counts perturb each M-step by O(ε) per letter.
        assert (np.diff(history, axis=0) >= -eps * letters).all()
        assert (history[-1] >= history[0]).all()
    corpus = letter_ids(text[:-1])
    _, _, expected = reference_fit(corpus, *initial_parameters(m, 0, EPS), 10, EPS)
    np.testing.assert_allclose(BaumWelch(m, backend=backend).fit_log_likelihoods(text)[:, -1], expected, rtol=1e-10)


@pytest.mark.parametrize("implementation", ["log", "scaling"])
@pytest.mark.parametrize("num_iterations", [1, 5])
def test_unmasked_reference_em_equals_hmmlearn(num_iterations, implementation):
    """An independent oracle for the reference's EM step: hmmlearn's ``CategoricalHMM``, on an HMM without masks.

    The chain: the package (both backends) ≡ the masked per-prefix reference (the tests above); the reference's
    :func:`reference_em_step` with every entry of A and π allowed and ε = 0 is textbook Baum–Welch, ≡ hmmlearn's
    EM (this test). What no outside code checks is then the masks and ε, App. C.3–C.4 read directly
    (``test_transition_mask_matches_appendix_c3``, ``test_start_mask_and_cold_start_match_appendix_c4``).

    hmmlearn's conventions, matched explicitly rather than by tolerance:
    - ``monitor_.history[i]`` is log P(O) under the parameters *before* the i-th M-step (its E-step's value),
      as is the ``log_likelihood`` that ``reference_em_step`` returns; the fitted parameters' log P(O) is not in
      the history, so it is compared with ``model.score``.
    - it stops when a gain is ``< tol``: ``tol = -inf`` never stops early, so it runs exactly ``n_iter`` steps.
    - its Dirichlet priors default to 1, i.e. ``prior - 1 = 0`` pseudo-counts: the M-step is maximum likelihood,
      as with ε = 0; its clip at 0 and its "zero stays zero" rule are inactive with positive parameters.
    - π = normalised Σ_strings γ_0 (the reference: their mean, normalised); A = ξ normalised over rows (the
      reference divides by Σ_{t<T-1} γ_t first, the same row sums); a string of length 1 adds no transitions to
      either (hmmlearn skips it, the reference's ξ sum is empty): the corpus has one.

    Seen failing (then restored) with the ξ sum's t = 0 term dropped, or the first letter's γ dropped from B's
    counts. Not seen here: the division of ξ by Σ_{t<T-1} γ_t, which cancels in A's row normalisation when ε = 0
    and nothing is masked; it matters only with ε and the masks, where the 144-state test above catches an error.
    """
    from hmmlearn.hmm import CategoricalHMM  # a dev dependency (CI installs it); here, so the other tests need not

    rng = np.random.default_rng(0)
    num_states, num_symbols = 5, 4
    corpus = [rng.integers(num_symbols, size=length).tolist() for length in (7, 1, 12, 4, 9, 15)]
    a, b, pi = (
        w / w.sum(-1, keepdims=True)
        for w in (rng.uniform(0.1, 1, shape) for shape in ((num_states,) * 2, (num_states, num_symbols), num_states))
    )  # (S, S), (S, V), (S,)
    fitted, history = (a, b, pi), []
    for _ in range(num_iterations):
        fitted, log_likelihood, _ = reference_em_step(corpus, *fitted, True, True, eps=0.0)
        history.append(log_likelihood)
    final_log_likelihood = sum(reference_forward_backward(obs, *fitted)[3] for obs in corpus)

    model = CategoricalHMM(
        num_states,
        n_features=num_symbols,
        n_iter=num_iterations,
        tol=-np.inf,
        params="ste",
        init_params="",  # keep the parameters set below
        implementation=implementation,
    )
    model.startprob_, model.transmat_, model.emissionprob_ = pi.copy(), a.copy(), b.copy()
    x, lengths = np.concatenate(corpus)[:, None], [len(obs) for obs in corpus]  # (Σ lengths, 1), (strings,)
    model.fit(x, lengths)

    assert len(model.monitor_.history) == num_iterations
    np.testing.assert_allclose(model.transmat_, fitted[0], rtol=0, atol=1e-8)
    np.testing.assert_allclose(model.emissionprob_, fitted[1], rtol=0, atol=1e-8)
    np.testing.assert_allclose(model.startprob_, fitted[2], rtol=0, atol=1e-8)
    np.testing.assert_allclose(list(model.monitor_.history), history, rtol=0, atol=1e-8)
    assert model.score(x, lengths) == pytest.approx(final_log_likelihood, rel=0, abs=1e-8)
    # EM moved the parameters and raised log P(O): a fit that did nothing on both sides would not pass
    assert np.abs(fitted[0] - a).max() > 1e-2 and final_log_likelihood > history[0] + 0.1


def test_rows_are_distributions_over_the_ngram_vocabulary():
    text = "abcab|bcab|ca|abca|bc"
    probs, ngram = BaumWelch().predict_proba(text), InContextNGram(3).predict_proba(text)
    assert probs.shape == ngram.shape == (len(text) - 1, 20)
    assert (probs >= 0).all()
    np.testing.assert_allclose(probs.sum(1), 1, atol=1e-12)
    # '.' and '|' are never emitted, so they get only what unvisited states (uniform B rows) give them
    np.testing.assert_array_equal(probs[:, 0], probs[:, 19])
    assert probs[-1, 0] < 1e-3
    assert probs.argmax(1).min() >= 1 and probs.argmax(1).max() <= 4  # a letter seen in the context


def test_rejects_bad_texts_and_arguments():
    with pytest.raises(ValueError, match="only a..r"):
        BaumWelch().predict_proba("ab|x")
    with pytest.raises(ValueError, match="starts with"):
        BaumWelch().predict_proba("|ab")
    with pytest.raises(ValueError, match="num_iterations=-1"):
        BaumWelch(num_iterations=-1)
    assert BaumWelch().predict_proba("a").shape == (0, 20)


def test_backend_option_is_checked_before_any_work(monkeypatch):
    with pytest.raises(ValueError, match="backend='cuda' is not one of: 'auto', 'numba', 'torch'"):
        BaumWelch(backend="cuda")
    with pytest.raises(ValueError, match="backend='numba' computes in float64"):
        BaumWelch(backend="numba", dtype=torch.float32)
    assert BaumWelch(dtype=torch.float32).backend == BaumWelch(backend="torch").backend == "torch"
    with monkeypatch.context() as patch:  # as without numba installed
        patch.setattr(baum_welch_module, "_baum_welch_numba", None)
        with pytest.raises(ImportError, match="backend='numba' needs numba .* 'auto', 'numba', 'torch'"):
            BaumWelch(backend="numba")
        assert BaumWelch().backend == "torch"
        np.testing.assert_allclose(BaumWelch(3).predict_proba("ab|ba|a"), reference_predict_proba("ab|ba|a", 3))
    if baum_welch_module._baum_welch_numba is not None:
        assert BaumWelch().backend == "numba" and "backend='numba'" in repr(BaumWelch())


def test_evaluator_scores_extra_baselines_only_when_asked():
    rows = [
        {
            "text": "ab|ab",
            "start_state": 0,
            "transitions": [{"src": 0, "symbol": "a", "dst": 1}, {"src": 1, "symbol": "b", "dst": 0}],
        }
    ]
    plain = evaluate_regbench(None, None, rows)
    assert "Baum–Welch" not in plain["baselines"]
    extra = evaluate_regbench(None, None, rows, extra_baselines={"Baum–Welch": BaumWelch(3)})
    assert extra["baselines"]["Baum–Welch"] == regbench_metrics([BaumWelch(3).predict_proba("ab|ab")], rows)
    assert {k: v for k, v in extra["baselines"].items() if k != "Baum–Welch"} == plain["baselines"]


def test_regbench_baselines_command(tmp_path, capsys):
    # the test split does not depend on n_train; 150 keeps the generated training split small
    results = analysis_main(["regbench-baselines", "--n-train", "150", "--max-rows", "1", "--output", str(tmp_path)])
    written = json.loads((tmp_path / "metrics.json").read_text())
    assert written["num_rows"] == 1 and (tmp_path / "regbench_baselines.png").stat().st_size > 0
    assert set(written["baselines"]) >= {"3-gram (paper)", "Baum–Welch"}
    assert written["baselines"]["Baum–Welch"] == pytest.approx(results["baselines"]["Baum–Welch"])
    with pytest.raises(SystemExit) as exit_info:
        analysis_main(["regbench-baselines", "--n-train", "0", "--output", str(tmp_path)])
    assert exit_info.value.code == 2 and "--n-train" in capsys.readouterr().err
