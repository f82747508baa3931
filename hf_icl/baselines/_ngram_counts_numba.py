"""Compiled `context_counts` of the in-context n-gram baselines (numba; optional, see :mod:`.ngram`).

The same single pass as the Python reference `ngram.context_counts_reference`, with the contexts as integers instead
of strings: a k-symbol context s_0 … s_{k−1} (letters 0..17, the padding `_` 18) is Σ s_i · 19^i, so the counts live
in dense tables of 19^k rows, one per context length k ≤ n − 1. Used where those tables are small (n ≤ 5: at most
19^4 = 130,321 rows); `tests/test_ngram_baseline.py` checks it against the reference on random instances.
"""

from __future__ import annotations

import numpy as np
from numba import njit

SYMBOLS = 19  # letters a..r (0..17) and the padding '_' (18)
PAD, BAR = 18, -1  # codes of '_' and '|'
MAX_ORDER = 5


@njit(cache=True, nogil=True)
def _padding_id(length):
    """The id of '_' * length."""
    value, power = 0, 1
    for _ in range(length):
        value += PAD * power
        power *= SYMBOLS
    return value


@njit(cache=True, nogil=True)
def _context_id(window, pad, k):
    """The id of the last k symbols of `window` (pad symbols, oldest first)."""
    value, power = 0, 1
    for i in range(k):
        value += window[pad - k + i] * power
        power *= SYMBOLS
    return value


@njit(cache=True, nogil=True)
def _start_string(grams, pad, window):
    for j in range(1, pad + 1):
        grams[j, _padding_id(j)] += pad - j + 1
    for i in range(pad):
        window[i] = PAD
    return pad


@njit(cache=True, nogil=True)
def context_counts_kernel(codes, n, cont_out, ctx_out):
    """Fill `cont_out` (T−1, n, 18) and `ctx_out` (T−1, n) for the symbol codes of one instance (see the reference)."""
    pad = n - 1
    rows = SYMBOLS**pad
    cont = np.zeros((n, rows, 18), dtype=np.int64)  # [k, id of a k-symbol context, letter]
    grams = np.zeros((n, rows), dtype=np.int64)  # [k, id of a k-gram]: occurrences, followed by anything or nothing
    window = np.empty(max(pad, 1), dtype=np.int64)
    total = _start_string(grams, pad, window)
    for t in range(cont_out.shape[0]):
        symbol = codes[t]
        if symbol == BAR:
            total += _start_string(grams, pad, window)
        else:
            for k in range(n):  # the k-gram context ending here, continued by the letter
                ctx = _context_id(window, pad, k)
                cont[k, ctx, symbol] += 1
                if k < pad:
                    grams[k + 1, ctx + symbol * SYMBOLS**k] += 1
            total += 1
            for i in range(pad - 1):
                window[i] = window[i + 1]
            if pad:
                window[pad - 1] = symbol
        ctx_out[t, 0] = total
        cont_out[t, 0] = cont[0, 0]
        for k in range(1, n):
            ctx = _context_id(window, pad, k)
            cont_out[t, k] = cont[k, ctx]
            ctx_out[t, k] = grams[k, ctx]
