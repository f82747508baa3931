"""Straightforward per-prefix oracle for the in-context Baum–Welch baseline (P1 Algorithm 2, App. C.2–C.4).

Refits a dense 144-state HMM from scratch for every prefix with plain numpy loops, one string at a time, exactly as
Algorithm 2 reads: scaled forward–backward per string, expected counts summed over the corpus, the masked M-step,
then the forward algorithm's posterior predictive. It shares only the masks and the cold start with
:mod:`hf_icl.baselines.baum_welch`. It is the test oracle of :class:`hf_icl.baselines.BaumWelch` and the reference
in ``benchmarks/baum_welch.py``.
"""

from __future__ import annotations

import numpy as np

from hf_icl.baselines.baum_welch import (
    EPS,
    initial_parameters,
    letter_ids,
    masked_normalize,
    start_mask,
    transition_mask,
)
from hf_icl.baselines.ngram import VOCAB_SIZE


def reference_forward_backward(obs: list[int], a: np.ndarray, b: np.ndarray, pi: np.ndarray):
    """Scaled forward–backward of one string (Rabiner 1989): γ (T, S), Σ_t ξ_t (S, S), α̂ (T, S), log P(obs)."""
    alpha, beta, c = np.zeros((len(obs), len(pi))), np.ones((len(obs), len(pi))), np.zeros(len(obs))
    for t, x in enumerate(obs):
        joint = (pi if t == 0 else alpha[t - 1] @ a) * b[:, x]
        c[t] = joint.sum()
        alpha[t] = joint / c[t]
    xi = np.zeros_like(a)
    for t in reversed(range(len(obs) - 1)):
        u = b[:, obs[t + 1]] * beta[t + 1] / c[t + 1]
        beta[t] = a @ u
        xi += alpha[t][:, None] * a * u[None, :]
    return alpha * beta, xi, alpha, np.log(c).sum()


def reference_em_step(corpus: list[list[int]], a, b, pi, transition_allowed, start_allowed, eps: float = EPS):
    """One E-step on ``corpus`` and the M-step after it: the new (A, B, π), log P(O) under the old ones, and the
    old α̂ of the last string.

    The masks are parameters: the paper's (``transition_mask``, ``start_mask`` with ε, App. C.3–C.4) in
    :func:`reference_fit`; with every entry allowed and ``eps = 0`` this is textbook Baum–Welch (the M-step
    A_lm ∝ ξ_lm / Σγ_l then normalises to ξ_lm / Σ_m ξ_lm), which ``tests/test_baum_welch.py`` checks against
    ``hmmlearn``'s ``CategoricalHMM``.

    Args:
        corpus: the strings' letter ids.
        a, b, pi: (S, S), (S, V), (S,) current parameters.
        transition_allowed, start_allowed: (S, S) and (S,) bool (or ``True``): the free entries of A and π.
        eps: the ε added before every normalisation.
    """
    stats = [reference_forward_backward(obs, a, b, pi) for obs in corpus]  # per string: γ, Σ_t ξ_t, α̂, log P
    log_likelihood, last_alpha = sum(s[3] for s in stats), stats[-1][2][-1]  # scalar, (S,)
    emit = np.zeros_like(b)  # (S, V): Σ_t γ_t(l) [o_t = v] over the corpus
    for obs, (gamma, *_) in zip(corpus, stats):
        for t, x in enumerate(obs):
            emit[:, x] += gamma[t]
    denom = sum(s[0][:-1].sum(0) for s in stats)  # (S,): Σ_{t < T-1} γ_t(l), the expected departures from l
    a = masked_normalize(sum(s[1] for s in stats) / (denom + eps)[:, None], transition_allowed, eps)  # (S, S)
    b = masked_normalize(emit, True, eps)  # (S, V)
    pi = masked_normalize(sum(s[0][0] for s in stats) / len(corpus), start_allowed, eps)  # (S,): mean γ_0
    return (a, b, pi), log_likelihood, last_alpha


def reference_fit(
    corpus: list[list[int]], a, b, pi, num_iterations: int = 10, eps: float = EPS, masks: tuple | None = None
):
    """Plain Algorithm 2 on one corpus: the fitted (A, B, π), α̂ of the last string and log P(O) per E-step.

    ``masks`` = (transition_allowed, start_allowed) as in :func:`reference_em_step`; default: the paper's.
    """
    if masks is None:
        m = int(round(np.sqrt(len(pi))))
        masks = (transition_mask(m), start_mask(m))
    history = []
    for _ in range(num_iterations):
        (a, b, pi), log_likelihood, _ = reference_em_step(corpus, a, b, pi, *masks, eps)
        history.append(log_likelihood)
    stats = [reference_forward_backward(obs, a, b, pi) for obs in corpus]
    history.append(sum(s[3] for s in stats))
    return (a, b, pi), stats[-1][2][-1], history


def reference_predict_proba(
    text: str, num_dfa_states=12, num_iterations=10, eps=EPS, seed=0, warm_start=False, rows=None
) -> np.ndarray:
    """Straightforward per-prefix refit (dense A, numpy loops): the oracle of :class:`BaumWelch`.

    Args:
        text: a RegBench problem instance.
        num_dfa_states, num_iterations, eps, seed, warm_start: as in :class:`BaumWelch`.
        rows: prefix indices ``i`` to compute (default: all ``len(text) - 1``).

    Returns:
        ``(len(rows), 20)`` array; row ``i`` is p(text[i + 1] | text[: i + 1]).
    """
    rows = list(range(len(text) - 1)) if rows is None else list(rows)
    last_letter = {i: text.rindex("|", 0, i + 1) - 1 if text[i] == "|" else i for i in rows}
    needed = set(last_letter.values())
    if warm_start:
        needed = {i for i in range(max(needed, default=-1) + 1) if text[i] != "|"}
    initial = params = initial_parameters(num_dfa_states, seed, eps)
    fits = {}
    for i in sorted(needed):
        corpus = letter_ids(text[: i + 1])
        params, alpha, _ = reference_fit(corpus, *(params if warm_start else initial), num_iterations, eps)
        a, b, pi = params
        fits[i] = ((alpha @ a) @ b, pi @ b)
    out = np.array([fits[last_letter[i]][text[i] == "|"] for i in rows]).reshape(len(rows), VOCAB_SIZE)
    return out / out.sum(1, keepdims=True)
