"""Brute-force oracle for the in-context n-gram baselines (P1 Appendix C.1, Algorithm 1).

Refits ``Counter``-based k-gram counts from scratch for every prefix, as the authors' code does, and
evaluates the back-off recursively, letter by letter. It is the test oracle for
:class:`hf_icl.baselines.InContextNGram` and the reference in ``benchmarks/ngram_baseline.py``.
"""

from __future__ import annotations

from collections import Counter

import numpy as np


def _paper(ctx: str, vocab: list[str], counts: Counter) -> dict[str, float]:
    """P(c | ctx) of Algorithm 1 with reserved mass (eq. 93-94), for every c in ``vocab``."""
    if not ctx:
        total = sum(v for g, v in counts.items() if len(g) == 1)  # '_' tokens included
        return {c: counts[c] / total for c in vocab}
    seen = {c: counts[ctx + c] / counts[ctx] for c in vocab if counts[ctx + c] > 0}
    beta = 1.0 - sum(seen.values())
    lower = _paper(ctx[1:], vocab, counts)
    z = sum(lower[c] for c in vocab if c not in seen)
    return {c: seen[c] if c in seen else beta * lower[c] / z for c in vocab}


def _normalized(ctx: str, vocab: list[str], counts: Counter) -> dict[str, float]:
    """Maximum likelihood after ctx, backing off only when ctx has no letter continuation."""
    total = sum(counts[ctx + c] for c in vocab)
    if total == 0:
        return _normalized(ctx[1:], vocab, counts)
    return {c: counts[ctx + c] / total for c in vocab}


def refit_predict_proba(text: str, n: int, variant: str = "paper") -> np.ndarray:
    """Per-prefix refit of the in-context n-gram model.

    Args:
        text: a RegBench problem instance.
        n: n-gram order (>= 1).
        variant: ``"paper"`` or ``"normalized"``.

    Returns:
        Array of shape ``(len(text) - 1, 20)``; row ``t - 1`` is the distribution after ``text[:t]``.
    """
    rows = np.zeros((max(len(text) - 1, 0), 20))
    for t in range(1, len(text)):
        corpus = text[:t].split("|")
        padded = ["_" * (n - 1) + s for s in corpus]
        counts: Counter = Counter()
        for s in padded:
            for k in range(1, n + 1):
                for i in range(len(s) - k + 1):
                    counts[s[i : i + k]] += 1
        vocab = sorted(set("".join(corpus)))
        ctx = padded[-1][len(padded[-1]) - (n - 1) :]
        dist = (_paper if variant == "paper" else _normalized)(ctx, vocab, counts) if vocab else {}
        for c, p in dist.items():
            rows[t - 1, ord(c) - ord("a") + 1] = p
    return rows
