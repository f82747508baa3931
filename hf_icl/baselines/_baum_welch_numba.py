"""Compiled CPU kernel of the in-context Baum–Welch baseline (numba; optional, see :mod:`.baum_welch`).

The maths is that of :mod:`.baum_welch` (P1 Algorithm 2 with the masks of App. C.3–C.4): every letter prefix of an
instance is refitted from the cold start by ``num_iterations`` EM iterations, then the posterior-predictive next-letter
distribution is read off. Here one prefix is fitted at a time in compiled loops, so its parameters stay in cache and
there is no per-letter call overhead. Pair state (p, c) (previous, current DFA state) is entry ``[p, c]`` of an (M, M)
array; A = r 1ᵀ + Δ with Δ_(i,j),(j,k) = D[j, i, k], so αA, Au and the ξ statistics cost M³ per letter
(:mod:`._baum_welch_numba_steps`). float64; ``fastmath`` is off, results equal the torch path to ~1e-13.

Prefix sharing: with a cold start, the first E-step of every prefix of an instance runs with the same parameters, so
its forward messages are those of the whole instance, and its statistics are those of the completed strings before
the prefix's last string (running sums over the instance) plus those of that last, possibly partial, string.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.core import config as numba_config

from ._baum_welch_numba_steps import backward_step, forward_step, scale_all, start_step


@njit(cache=True)
def _forward(ids, starts, first, last, r, D, Bt, pi, alpha, scales):
    """Scaled forward pass over letters [first, last]: fills α̂_t = alpha[t] and c_t = scales[t]; returns Σ log c_t."""
    log_likelihood = 0.0
    for t in range(first, last + 1):
        if starts[t]:
            scales[t] = start_step(pi, Bt[ids[t]], alpha[t])
        else:
            scales[t] = forward_step(alpha[t - 1], r, D, Bt[ids[t]], alpha[t])
        log_likelihood += np.log(scales[t])
    return log_likelihood


@njit(cache=True)
def _backward(ids, starts, first, last, r, Dt, Bt, alpha, scales, xi, denom, emit, first_gamma, beta, u):
    """Backward pass over letters [first, last] (``last`` ends a string): adds ξ without its A factor
    (xi[j, i, k] += α̂_t(i, j) u_{t+1}(j, k)), Σγ over letters with a successor, emissions and γ at string starts."""
    b, d, f = beta.reshape(-1), denom.reshape(-1), first_gamma.reshape(-1)
    for t in range(last, first - 1, -1):
        ends = t == last or starts[t + 1]
        if ends:  # β̂ = 1 at a string's last letter
            beta[:] = 1.0
        else:
            backward_step(alpha[t], beta, Bt[ids[t + 1]], 1.0 / scales[t + 1], r, Dt, xi, u)
        a, e = alpha[t].reshape(-1), emit[ids[t]].reshape(-1)
        for s in range(b.shape[0]):
            gamma = a[s] * b[s]
            e[s] += gamma
            if not ends:
                d[s] += gamma
            if starts[t]:
                f[s] += gamma


@njit(cache=True)
def _maximize(xi, denom, emit, first_gamma, num_strings, eps, r, D, Dt, Bt, pi, weights):
    """In-place M-step with the masks of App. C.3–C.4 (as ``baum_welch.maximize``) from one fit's statistics."""
    m, vocab = D.shape[0], Bt.shape[0]
    s_total = m * m
    for i in range(m):
        for j in range(m):
            if i == j:  # no free entry: every entry is ε, so the row is uniform
                r[i, j] = eps / (s_total * eps)
                continue
            scale, z = denom[i, j] + eps, 0.0
            for k in range(m):
                weights[k] = xi[j, i, k] * (r[i, j] + D[j, i, k]) / scale + eps
                z += weights[k]
            z += (s_total - m) * eps
            r[i, j] = eps / z
            for k in range(m):
                D[j, i, k] = weights[k] / z - r[i, j]
    for j in range(m):
        for i in range(m):
            for k in range(m):
                Dt[j, k, i] = D[j, i, k]
    for i in range(m):
        for j in range(m):
            z = 0.0
            for x in range(vocab):
                z += emit[x, i, j] + eps
            for x in range(vocab):
                Bt[x, i, j] = (emit[x, i, j] + eps) / z
    z = 0.0
    for i in range(m):
        for j in range(m):
            pi[i, j] = first_gamma[i, j] / num_strings + eps if i == 0 and j != 0 else eps
            z += pi[i, j]
    scale_all(pi, 1.0 / z)


@njit(cache=True)
def _predict(weights, Bt, out):
    """out[x] ∝ Σ_s weights[s] B[s, x], normalised; weights (M, M), Bt (V, M, M)."""
    w = weights.reshape(-1)
    z = 0.0
    for x in range(Bt.shape[0]):
        e, value = Bt[x].reshape(-1), 0.0
        for s in range(w.shape[0]):
            value += w[s] * e[s]
        out[x] = value
        z += value
    for x in range(Bt.shape[0]):
        out[x] /= z


@njit(cache=True)
def fit_instance(ids, starts, r0, D0, Bt0, pi0, num_iterations, eps, warm_start, next_out, first_out, history):
    """Fits every letter prefix ``ids[: k + 1]`` of one instance (strings open where ``starts`` is True).

    Args:
        ids, starts: (K,) letter ids and whether each letter opens a string (``starts[0]`` is True).
        r0, D0, Bt0, pi0: cold start in block form: (M, M), (M, M, M) [j, i, k], (V, M, M) emissions, (M, M).
        num_iterations, eps: EM iterations per prefix and the ε of the masks.
        warm_start: start prefix k from prefix k − 1's fit instead of the cold start.
        next_out, first_out: (K, V) written: p(next letter | prefix k) and p(first letter | prefix k + "|").
        history: (num_iterations + 1, K) written: log P(O | λ) of each E-step and after the last M-step.
    """
    n, m = ids.shape[0], D0.shape[0]
    r, D, Dt, Bt, pi = r0.copy(), D0.copy(), np.empty_like(D0), Bt0.copy(), pi0.copy()
    for j in range(m):
        for i in range(m):
            for k in range(m):
                Dt[j, k, i] = D0[j, i, k]
    Dt0 = Dt.copy()
    xi, denom, emit, first_gamma = np.zeros_like(D0), np.zeros_like(r0), np.zeros_like(Bt0), np.zeros_like(r0)
    base = (np.zeros_like(D0), np.zeros_like(r0), np.zeros_like(Bt0), np.zeros_like(r0))
    alpha, scales = np.zeros((n, m, m), r0.dtype), np.zeros(n, r0.dtype)
    alpha0, scales0, cum_log0 = np.zeros((n, m, m), r0.dtype), np.zeros(n, r0.dtype), np.zeros(n)
    beta, u, joint, work = np.empty_like(r0), np.empty_like(r0), np.empty_like(r0), np.empty(m, r0.dtype)
    ones = np.ones_like(r0)
    if not warm_start:  # the first E-step of every prefix runs with the cold start: one forward pass for all
        _forward(ids, starts, 0, n - 1, r0, D0, Bt0, pi0, alpha0, scales0)
        total = 0.0
        for t in range(n):
            total += np.log(scales0[t])
            cum_log0[t] = total
    string_start, num_strings = 0, 0
    for k in range(n):
        if starts[k]:
            string_start, num_strings = k, num_strings + 1
        first_iteration = 0
        if not warm_start:  # statistics of the completed strings (running sums) plus those of the last string up to k
            r[:], D[:], Dt[:], Bt[:], pi[:] = r0, D0, Dt0, Bt0, pi0
            history[0, k] = cum_log0[k]
            xi[:], denom[:], emit[:], first_gamma[:] = base
            _backward(ids, starts, string_start, k, r, Dt, Bt, alpha0, scales0, xi, denom, emit, first_gamma, beta, u)
            if k == n - 1 or starts[k + 1]:
                base[0][:], base[1][:], base[2][:], base[3][:] = xi, denom, emit, first_gamma
            if num_iterations > 0:
                _maximize(xi, denom, emit, first_gamma, num_strings, eps, r, D, Dt, Bt, pi, work)
            first_iteration = 1
        for iteration in range(first_iteration, num_iterations + 1):
            history[iteration, k] = _forward(ids, starts, 0, k, r, D, Bt, pi, alpha, scales)
            if iteration < num_iterations:
                xi[:], denom[:], emit[:], first_gamma[:] = 0.0, 0.0, 0.0, 0.0
                _backward(ids, starts, 0, k, r, Dt, Bt, alpha, scales, xi, denom, emit, first_gamma, beta, u)
                _maximize(xi, denom, emit, first_gamma, num_strings, eps, r, D, Dt, Bt, pi, work)
        forward_step(alpha[k] if warm_start or num_iterations > 0 else alpha0[k], r, D, ones, joint)  # ∝ α̂_k A
        _predict(joint, Bt, next_out[k])
        _predict(pi, Bt, first_out[k])


def fit_prefixes(ids, starts, r0, D0, Bt0, pi0, num_iterations: int, eps: float, warm_start: bool):
    """:func:`fit_instance` with its outputs allocated: (K, V) next-letter and first-letter distributions and the
    (num_iterations + 1, K) log-likelihoods. Compiles on first use (about 15 s, then cached on disk) with numba's
    SLP vectoriser on, which numba leaves off by default since an LLVM 14 miscompile (numba PR #8852); the tests
    check these kernels against the torch path and the per-prefix reference."""
    n, vocab = len(ids), Bt0.shape[0]
    next_out, first_out, history = np.zeros((n, vocab)), np.zeros((n, vocab)), np.zeros((num_iterations + 1, n))
    if n:
        previous, numba_config.SLP_VECTORIZE = numba_config.SLP_VECTORIZE, 1
        try:
            fit_instance(ids, starts, r0, D0, Bt0, pi0, num_iterations, eps, warm_start, next_out, first_out, history)
        finally:
            numba_config.SLP_VECTORIZE = previous
    return next_out, first_out, history
