"""In-context Baum–Welch HMM baseline for RegBench (P1 Algorithm 2, Appendix C.2–C.4; DESIGN §5.8).

For every prefix ``text[: i + 1]`` an HMM over |S| = M² pair states H_(i,j) (previous, current automaton state,
M = 12) is fitted to the prefix's strings ``O = text[: i + 1].split("|")`` by 10 EM iterations from a cold start,
then the next letter is predicted with the forward algorithm on the last (partial) string:

    p(x) ∝ Σ_m (Σ_l α_T(l) A_lm) B_mx.                                   (Alg. 2, prediction step)

After a ``|`` the current string is empty, so the previous prefix's fit predicts a first letter: p(x) ∝ Σ_l π_l B_lx.
Masks, applied with ε = 1e-5 before every normalisation (App. C.3–C.4, berlino/seq_icl ``batched_baum_welch.py``):
A_(i,j),(l,k) is free only for l = j and i ≠ j (no self-repeat), every other entry is ε; π is free on (0, j), j ≠ 0.
M-step: A_lm ∝ ξ_lm / (Σ_t γ_t(l) + ε) + ε, B_mk ∝ b_mk + ε, π ∝ γ_1 / |O| + ε, over the whole 20-token vocabulary.

Departures from the authors' script: the random initial A, B are drawn once from ``seed`` (the same cold start for
every prefix, so results are reproducible); the A denominator sums γ over letters that have a successor (the script
also counted the last letter of every string but the longest); its time-dependent "possible states" mask, in neither
the paper nor DESIGN, is left out; empty strings are skipped; float64 by default (the script ran float32).

Fast path: with the masks, A = r 1ᵀ + Δ where r_l is the masked value of row l and Δ is non-zero only on the M
blocks (i, j) → (j, k), so αA and Au cost M³ instead of M⁴. All prefixes of an instance are fitted at once: fits
are sorted by their last letter, so the fits still running at letter s are a leading slice [0, n_s), and each string
restarts from π (scaled forward–backward, Rabiner 1989). The per-prefix oracle: ``benchmarks/_baum_welch_reference.py``.

Backends: that torch path is bound by per-letter call overhead (12 × 12 block mat-vecs); with numba installed
(``pip install "hf_icl[baselines]"``) the default ``backend="auto"`` runs the same maths as a compiled kernel
(:mod:`._baum_welch_numba`), one prefix at a time with no per-letter overhead, and shares the first E-step of all
prefixes of an instance (same cold start, so same forward pass); float64 only. It equals the torch path to ~1e-13.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from .ngram import VOCAB_SIZE, check_regbench_text

try:  # optional compiled backend: pip install "hf_icl[baselines]"
    from . import _baum_welch_numba
except ImportError:  # numba is missing: the torch path
    _baum_welch_numba = None

BACKENDS = ("auto", "numba", "torch")

EPS = 1e-5
LETTERS = "abcdefghijklmnopqr"


def transition_mask(num_dfa_states: int = 12) -> np.ndarray:
    """(S, S) bool, S = M²: True where A_(i,j),(l,k) is free, i.e. l = j and i ≠ j (App. C.3)."""
    m = num_dfa_states
    i, j, l, k = np.meshgrid(*[np.arange(m)] * 4, indexing="ij")
    return ((l == j) & (i != j)).reshape(m * m, m * m)


def start_mask(num_dfa_states: int = 12) -> np.ndarray:
    """(S,) bool: True on the start pairs (0, j), j ≠ 0 (App. C.4)."""
    mask = np.zeros(num_dfa_states**2, dtype=bool)
    mask[1:num_dfa_states] = True
    return mask


def masked_normalize(weights, allowed, eps: float = EPS):
    """``where(allowed, weights + eps, eps)`` normalised over the last axis (numpy or torch)."""
    if isinstance(weights, torch.Tensor):
        out = torch.where(torch.as_tensor(allowed), weights + eps, torch.full_like(weights, eps))
        return out / out.sum(-1, keepdim=True)
    out = np.where(allowed, weights + eps, eps)
    return out / out.sum(-1, keepdims=True)


def initial_parameters(num_dfa_states: int = 12, seed: int = 0, eps: float = EPS):
    """Cold start (A, B, π): float64 numpy arrays (S, S), (S, V), (S,) from ``torch.Generator().manual_seed(seed)``."""
    s = num_dfa_states**2
    generator = torch.Generator().manual_seed(seed)
    a = torch.rand(s, s, generator=generator, dtype=torch.float64).numpy()
    b = torch.rand(s, VOCAB_SIZE, generator=generator, dtype=torch.float64).numpy()
    return (
        masked_normalize(a, transition_mask(num_dfa_states), eps),
        masked_normalize(b, True, eps),
        masked_normalize(np.ones(s), start_mask(num_dfa_states), eps),
    )


def letter_ids(text: str) -> list[list[int]]:
    """Checks ``text`` and returns the vocabulary ids of each non-empty ``|``-separated string."""
    bad = set(text) - set(LETTERS + "|")
    if bad:
        raise ValueError(f"text contains {sorted(bad)!r}: only a..r and '|' are allowed")
    if text[:1] == "|":
        raise ValueError("text starts with '|': the first prefix must hold a letter")
    return [[ord(c) - ord("a") + 1 for c in piece] for piece in text.split("|") if piece]


def cur_major(x: torch.Tensor) -> torch.Tensor:
    """Reorders the last axis from pair order i·M + j (previous-major) to j·M + i (current-major), or back."""
    m = int(round(x.shape[-1] ** 0.5))
    return x.unflatten(-1, (m, m)).transpose(-1, -2).flatten(-2)


class Params(NamedTuple):
    """HMM parameters of F fits in block form: A = r 1ᵀ + Δ with Δ_(i,j),(j,k) = D[j, i, k] (zero for i = j).

    Forward messages α are kept current-major (the layout αA reads, block by block), backward messages β
    previous-major (the layout Au writes); the ``_c`` fields are the current-major copies that α meets.
    """

    r: torch.Tensor  # (F, S) masked value of each row of A, previous-major
    r_c: torch.Tensor  # (F, S) the same, current-major
    D: torch.Tensor  # (F, M, M, M) [j, i, k]
    Dt: torch.Tensor  # (F, M, M, M) [j, k, i]
    Bt_c: torch.Tensor  # (F, V, S) emissions, current-major
    pi_c: torch.Tensor  # (F, S) current-major


def make_params(r, d, b, pi) -> Params:
    """:class:`Params` from previous-major r (F, S), D (F, M, M, M), B (F, S, V) and π (F, S)."""
    return Params(r, cur_major(r), d, d.transpose(2, 3).contiguous(), cur_major(b.transpose(1, 2)), cur_major(pi))


def to_blocks(a, b, pi, num_fits: int, dtype=torch.float64) -> Params:
    """Dense (A, B, π) of one HMM (masked as in :func:`transition_mask`) -> block :class:`Params` for ``num_fits``."""
    m = int(round(np.sqrt(a.shape[0])))
    a, masked = torch.as_tensor(a, dtype=dtype), torch.as_tensor(~transition_mask(m))
    r = (a * masked).sum(-1) / masked.sum(-1)  # (S,) all masked entries of a row are equal
    blocks = torch.diagonal(a.view(m, m, m, m), dim1=1, dim2=2).permute(2, 0, 1)  # (j, i, k) = A_(i,j),(j,k)
    d = (blocks - r.view(m, m).T[..., None]) * ~torch.eye(m, dtype=torch.bool)[..., None]  # (M, M, M)
    b, pi = torch.as_tensor(b, dtype=dtype), torch.as_tensor(pi, dtype=dtype)
    return make_params(*(x.expand(num_fits, *x.shape).contiguous() for x in (r, d, b, pi)))


def stacked_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` over stacks of small blocks; on CPU numpy's stacked loop is about 2× faster than MKL's batched GEMM
    behind ``torch.matmul`` at M = 12 (same float64 results up to rounding)."""
    if a.device.type == "cpu":
        return torch.from_numpy(np.matmul(a.numpy(), b.numpy()))
    return a @ b


def propagate(alpha_c: torch.Tensor, p: Params) -> torch.Tensor:
    """αA for the first ``n = len(alpha_c)`` fits, in M³ per fit: current-major (n, S) -> previous-major (n, S)."""
    n, m = alpha_c.shape[0], p.D.shape[1]
    out = stacked_matmul(alpha_c.view(n, m, 1, m), p.D[:n]).view(n, m * m)  # (n, j, 1, k) -> target (j, k)
    return out.add_(torch.linalg.vecdot(alpha_c, p.r_c[:n])[:, None])


def pull_back(u: torch.Tensor, p: Params, out: torch.Tensor) -> torch.Tensor:
    """Au for the first ``n = len(u)`` fits, previous-major (n, S), written into the contiguous ``out``."""
    n, m = u.shape[0], p.D.shape[1]
    au = stacked_matmul(u.view(n, m, 1, m), p.Dt[:n]).view(n, m, m).transpose(1, 2)  # (n, i, j) source (i, j)
    return torch.addcmul(au, p.r[:n].view(n, m, m), u.sum(-1)[:, None, None], out=out.view(n, m, m))


def transposed_product(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """x ⊙ y for x in one pair order and y in the other, both (n, S); the result is in y's order."""
    n, m = y.shape[0], int(round(y.shape[1] ** 0.5))
    out = y.new_empty(y.shape)
    torch.mul(x.view(n, m, m).transpose(1, 2), y.view(n, m, m), out=out.view(n, m, m))
    return out


class Steps(NamedTuple):
    """Per letter s of F fits sorted by last letter (descending): fits [0, n_s) are running, [0, k_s) go on after s."""

    active: list[int]  # n_s
    emission: list[torch.Tensor]  # (n_s,) rows f·V + x_s of Bt_c.view(F·V, S)
    start: list[torch.Tensor]  # (n_s, 1) letter s opens a string
    end: list[torch.Tensor]  # (k_s, 1) letter s closes a string of a fit that goes on after it
    flags: list[tuple[bool, bool, bool]]  # every fit starts at s, some fit starts at s, some string ends at s
    num_strings: torch.Tensor  # (F,) |O| of each fit


def make_steps(instances: list[list[list[int]]], fit_instance: np.ndarray, fit_last: np.ndarray) -> Steps:
    """Args: instances: per instance, its strings' letter ids; fit_instance, fit_last: (F,) sorted by fit_last desc."""
    width = max(fit_last) + 2
    ids, starts = np.zeros((len(instances), width), np.int64), np.ones((len(instances), width), bool)
    for b, strings in enumerate(instances):
        flat = [c for piece in strings for c in piece][: width - 1]
        ids[b, : len(flat)] = flat
        starts[b, : len(flat)] = np.isin(np.arange(len(flat)), np.cumsum([0] + [len(p) for p in strings]))
    steps = Steps([], [], [], [], [], torch.as_tensor(np.cumsum(starts, 1)[fit_instance, fit_last]))
    for s in range(max(fit_last) + 1):
        n, k = int((fit_last >= s).sum()), int((fit_last > s).sum())
        start, end = starts[fit_instance[:n], s], starts[fit_instance[:k], s + 1]
        steps.active.append(n)
        steps.emission.append(torch.as_tensor(np.arange(n) * VOCAB_SIZE + ids[fit_instance[:n], s]))
        steps.start.append(torch.as_tensor(start[:, None]))
        steps.end.append(torch.as_tensor(end[:, None]))
        steps.flags.append((bool(start.all()), bool(start.any()), bool(end.any())))
    return steps


def forward(p: Params, steps: Steps):
    """Scaled forward pass of every fit: lists of α̂_s (n_s, S) current-major and c_s (n_s,); Σ_s log c_s = log P(O)."""
    alphas, scales, alpha, emissions = [], [], None, p.Bt_c.flatten(0, 1)  # (F·V, S)
    for s, n in enumerate(steps.active):
        all_start, any_start, _ = steps.flags[s]
        emit = emissions.index_select(0, steps.emission[s])  # (n, S)
        if all_start:
            joint = p.pi_c[:n] * emit
        else:
            joint = transposed_product(propagate(alpha[:n], p), emit)  # (n, S)
            if any_start:
                joint = torch.where(steps.start[s], p.pi_c[:n] * emit, joint)
        scales.append(joint.sum(-1))
        alpha = joint.div_(scales[-1][:, None])
        alphas.append(alpha)
    return alphas, scales


def expected_counts(p: Params, steps: Steps, alphas, scales, block: int = 16):
    """Backward pass: ξ on the free blocks (before × A), Σγ over letters with a successor, b and γ_1, previous-major.

    Σ_t α̂_t(i,j) u_{t+1}(j,k) is gathered ``block`` letters at a time and contracted over t by one stacked matmul.
    """
    m, length, emissions = p.D.shape[1], len(steps.active), p.Bt_c.flatten(0, 1)  # (F·V, S)
    xi = torch.zeros_like(p.D)  # (F, j, i, k)
    ends, first, emit, u = torch.zeros_like(p.r), torch.zeros_like(p.r), torch.zeros_like(emissions), None
    a_block = p.r.new_empty(len(steps.end[0]), m, block, m)  # (w, j, L, i) α̂_t, current-major
    u_block = torch.empty_like(a_block)  # (w, j, L, k) u_{t+1}, previous-major
    for s in reversed(range(length)):
        n, alpha, end, (_, any_start, any_end) = steps.active[s], alphas[s], steps.end[s], steps.flags[s]
        k, low = len(end), s - s % block  # fits going on after letter s; first letter of this block
        if s == length - 1 or s % block == block - 1:
            width = len(steps.end[low])
            a_block[:width].zero_(), u_block[:width].zero_()
        beta = alpha.new_empty(n, m * m)  # (n, S) β̂ = 1 at a string end
        beta[k:] = 1
        if k:
            if any_end:
                u = u * ~end  # (k, S) B_{x_{s+1}} β̂_{s+1} / c_{s+1}, zero across a string end
            pull_back(u, p, out=beta[:k])
            if any_end:
                beta[:k] += end
            a_block[:k, :, s - low] = alpha[:k].view(k, m, m)
            u_block[:k, :, s - low] = u.view(k, m, m)
        if s == low and width:
            xi[:width] += stacked_matmul(a_block[:width].transpose(2, 3), u_block[:width])
        gamma = transposed_product(alpha, beta)  # (n, S)
        emit.index_add_(0, steps.emission[s], gamma)
        ends[k:n] += gamma[k:]  # Σγ at string ends: the A denominator is Σγ minus these
        if any_end:
            ends[:k] += gamma[:k] * end
        if any_start:
            first[:n] += gamma * steps.start[s]
        u = transposed_product(emissions.index_select(0, steps.emission[s]), beta).div_(scales[s][:, None])
    emit = emit.view_as(p.Bt_c)
    return xi, emit.sum(1) - ends, emit, first


def maximize(p: Params, counts, num_strings: torch.Tensor, eps: float) -> Params:
    """M-step with the masks of App. C.3–C.4 (see the module docstring)."""
    xi, denom, emit, first = counts
    f, m = p.D.shape[:2]
    free = 1 - torch.eye(m, dtype=p.D.dtype)[..., None]  # (j, i, 1) 1 on rows (i, j) with i ≠ j
    r_ji = p.r.view(f, m, m).transpose(1, 2)[..., None]  # (F, j, i, 1)
    d_ji = denom.view(f, m, m).transpose(1, 2)[..., None]  # (F, j, i, 1)
    weights = (xi * (p.D + r_ji) / (d_ji + eps) + eps) * free  # (F, j, i, k) free entries before normalising
    z = weights.sum(-1, keepdim=True) + (m * m - m * free) * eps  # (F, j, i, 1) the other entries are ε
    r = eps / z  # (F, j, i, 1)
    d = (weights / z - r) * free
    b = emit.transpose(1, 2) + eps  # (F, S, V)
    pi = masked_normalize(first / num_strings[:, None], torch.as_tensor(start_mask(m)), eps)
    r = r.squeeze(-1).transpose(1, 2).reshape(f, m * m)
    return make_params(r, d, b / b.sum(-1, keepdim=True), pi)


def fit(p: Params, steps: Steps, num_iterations: int, eps: float):
    """EM from ``p``; returns the fitted params, α̂ at each fit's last letter (F, S) and log P(O) per E-step."""
    log_likelihoods = []
    for iteration in range(num_iterations + 1):
        alphas, scales = forward(p, steps)
        log_likelihood = torch.zeros_like(p.r[:, 0])
        for s, c in enumerate(scales):
            log_likelihood[: steps.active[s]] += c.log()
        log_likelihoods.append(log_likelihood)
        if iteration < num_iterations:
            p = maximize(p, expected_counts(p, steps, alphas, scales), steps.num_strings, eps)
    ends = steps.active[1:] + [0]  # fits [ends[s], n_s) have their last letter at s
    last = torch.cat([alphas[s][ends[s] :] for s in reversed(range(len(alphas)))])  # (F, S)
    return p, last, torch.stack(log_likelihoods)


class BaumWelch:
    """In-context Baum–Welch HMM baseline (P1 Algorithm 2), same interface as ``InContextNGram``.

    Args:
        num_dfa_states: M; the HMM has M² pair states (paper: 12, so 144).
        num_iterations: EM iterations per prefix (paper: 10).
        eps: the ε of the masks and the M-step (1e-5).
        seed: seed of the cold-start parameters (the same for every prefix and instance).
        warm_start: start prefix i's EM from the previous letter prefix's fit instead of the cold start. It changes
            the numbers and fits the prefixes one after the other (batched over instances only), so it is off.
        batch_size: instances fitted together by :meth:`predict_proba_batch` on the torch backend (the numba one
            fits one prefix at a time). The fits stream their parameters from memory at every letter, so one instance
            at a time (the default) keeps more of them in cache.
        dtype: ``torch.float64`` (default, equal to the reference to ~1e-12) or ``torch.float32`` (torch backend
            only, about 1.4× faster than its float64; probabilities within ~2e-4 of float64 on RegBench instances).
        backend: ``"numba"`` (the compiled kernel; needs numba), ``"torch"`` (the batched torch path), or ``"auto"``
            (default: numba when it is installed and ``dtype`` is float64, else torch). Same numbers to ~1e-13.
    """

    def __init__(
        self,
        num_dfa_states=12,
        num_iterations=10,
        eps=EPS,
        seed=0,
        warm_start=False,
        batch_size=1,
        dtype=torch.float64,
        backend="auto",
    ):
        for name, value, low in (
            ("num_dfa_states", num_dfa_states, 2),
            ("num_iterations", num_iterations, 0),
            ("batch_size", batch_size, 1),
        ):
            if not isinstance(value, (int, np.integer)) or value < low:
                raise ValueError(f"{name}={value!r} is not allowed: expected an integer >= {low}")
        if not 0 < eps < 1:
            raise ValueError(f"eps={eps!r} is not allowed: expected 0 < eps < 1")
        if dtype not in (torch.float32, torch.float64):
            raise ValueError(f"dtype={dtype!r} is not one of: torch.float32, torch.float64")
        allowed = ", ".join(map(repr, BACKENDS))
        if backend not in BACKENDS:
            raise ValueError(f"backend={backend!r} is not one of: {allowed}")
        if backend == "numba" and _baum_welch_numba is None:
            raise ImportError(
                f"backend='numba' needs numba (pip install 'hf_icl[baselines]'); backend is one of: {allowed} "
                "('auto' uses torch without numba)"
            )
        if backend == "numba" and dtype != torch.float64:
            raise ValueError(f"backend='numba' computes in float64: dtype={dtype!r} needs backend='torch' or 'auto'")
        if backend == "auto":
            backend = "numba" if _baum_welch_numba is not None and dtype == torch.float64 else "torch"
        self.backend = backend
        self.num_dfa_states, self.num_iterations, self.eps = int(num_dfa_states), int(num_iterations), float(eps)
        self.seed, self.warm_start, self.batch_size, self.dtype = int(seed), bool(warm_start), int(batch_size), dtype

    def predict_proba(self, text: str) -> np.ndarray:
        """Next-token distributions after every prefix ``text[: i + 1]``.

        Args:
            text: a RegBench problem instance (letters ``a``..``r`` joined by ``|``).

        Returns:
            Array of shape ``(len(text) - 1, 20)`` in ``REGBENCH_VOCAB`` order, rows summing to 1.
        """
        check_regbench_text(text)
        return self.predict_proba_batch([text])[0]

    def predict_proba_batch(self, texts: list[str]) -> list[np.ndarray]:
        """:meth:`predict_proba` of every text, fitting ``batch_size`` instances at a time.

        Args:
            texts: RegBench problem instances.

        Returns:
            One ``(len(text) - 1, 20)`` array per text, in order.
        """
        return [rows for rows, _ in self._fit_texts(texts)]

    def fit_log_likelihoods(self, text: str) -> np.ndarray:
        """log P(O | λ) of every letter prefix's fit before each M-step and after the last.

        Args:
            text: a RegBench problem instance.

        Returns:
            ``(num_iterations + 1, K)``, K = the number of letters in ``text[:-1]``.
        """
        return self._fit_texts([text])[0][1]

    def _fit_texts(self, texts: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        if isinstance(texts, str) or not isinstance(texts, (list, tuple)):
            raise TypeError(f"texts is a {type(texts).__name__}, expected a list of str (one text: predict_proba)")
        for i, text in enumerate(texts):
            check_regbench_text(text, f"texts[{i}]")  # every text before any work
            letter_ids(text)
        instances = [letter_ids(text[:-1]) for text in texts]
        order = sorted(range(len(texts)), key=lambda b: -sum(map(len, instances[b])))  # most letters first
        results = [None] * len(texts)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            for b, (letters, separators, history) in zip(chunk, self._fit_chunk([instances[b] for b in chunk])):
                is_letter = np.frombuffer(texts[b][:-1].encode(), np.uint8) != ord("|")  # (T-1,)
                last = np.cumsum(is_letter) - 1  # last letter of each prefix
                rows = np.where(is_letter[:, None], letters[last], separators[last])  # (T-1, V)
                results[b] = (rows.reshape(len(is_letter), VOCAB_SIZE), history)
        return results

    def _fit_chunk(self, instances: list[list[list[int]]]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per instance (most letters first): p(next | letter prefix k) and p(first letter | prefix k + "|"), both
        (K, V), and the log-likelihoods (num_iterations + 1, K)."""
        sizes = np.array([sum(map(len, strings)) for strings in instances])
        initial = initial_parameters(self.num_dfa_states, self.seed, self.eps)
        if self.backend == "numba":
            return [self._fit_numba(strings, initial) for strings in instances]
        out = [
            (np.zeros((n, VOCAB_SIZE)), np.zeros((n, VOCAB_SIZE)), np.zeros((self.num_iterations + 1, n)))
            for n in sizes
        ]
        if self.warm_start:  # prefix k of every instance still running, from its prefix k − 1 fit
            p = to_blocks(*initial, len(sizes), self.dtype)
            for k in range(max(sizes, default=0)):
                count = int((sizes > k).sum())
                p = self._fit_round(
                    instances, np.arange(count), np.full(count, k), Params(*(t[:count] for t in p)), out
                )
        else:  # every prefix of every instance at once, sorted by last letter, descending
            pairs = sorted(((b, k) for b, n in enumerate(sizes) for k in range(n)), key=lambda bk: -bk[1])
            if pairs:
                fit_instance, fit_last = (np.array(column) for column in zip(*pairs))
                self._fit_round(instances, fit_instance, fit_last, to_blocks(*initial, len(pairs), self.dtype), out)
        return out

    def _fit_numba(self, strings: list[list[int]], initial) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`_fit_chunk` of one instance on the compiled kernel."""
        m = self.num_dfa_states
        p = to_blocks(*initial, 1)
        blocks = (
            p.r[0].numpy().reshape(m, m),  # r[i, j] of row (i, j)
            p.D[0].numpy(),  # D[j, i, k]
            np.ascontiguousarray(initial[1].T).reshape(VOCAB_SIZE, m, m),  # B[(i, j), x] at [x, i, j]
            initial[2].reshape(m, m),
        )
        ids = np.array([c for piece in strings for c in piece], dtype=np.int64)
        starts = np.zeros(len(ids), dtype=np.bool_)  # letter t opens a string (strings are non-empty)
        starts[np.cumsum([0] + [len(piece) for piece in strings])[:-1]] = True
        return _baum_welch_numba.fit_prefixes(ids, starts, *blocks, self.num_iterations, self.eps, self.warm_start)

    def _fit_round(self, instances, fit_instance, fit_last, p: Params, out) -> Params:
        p, last, history = fit(p, make_steps(instances, fit_instance, fit_last), self.num_iterations, self.eps)
        next_letter = torch.einsum("fs,fvs->fv", cur_major(propagate(last, p)), p.Bt_c)  # (F, V)
        first_letter = torch.einsum("fs,fvs->fv", p.pi_c, p.Bt_c)  # (F, V)
        next_letter, first_letter = (x / x.sum(-1, keepdim=True) for x in (next_letter, first_letter))
        for f, (b, k) in enumerate(zip(fit_instance, fit_last)):
            out[b][0][k], out[b][1][k], out[b][2][:, k] = next_letter[f], first_letter[f], history[:, f]
        return p

    def __repr__(self) -> str:
        return (
            f"BaumWelch(num_dfa_states={self.num_dfa_states}, warm_start={self.warm_start}, dtype={self.dtype}, "
            f"backend={self.backend!r})"
        )
