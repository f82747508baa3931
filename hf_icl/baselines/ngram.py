"""In-context n-gram language models with back-off (P1 Appendix C.1, Algorithm 1; DESIGN §5.3).

At position ``t`` the in-context corpus is ``text[:t].split("|")`` (completed strings plus the current,
possibly empty, partial string), each left-padded with ``n - 1`` ``_``. Two variants:

``paper`` — exactly as the authors ran it (berlino/seq_icl ``predict_with_n_gram_back_off``,
backoff=True, addone=False). With ctx the last ``n - 1`` symbols of the padded current string,

    P_n(c | ctx) = c(ctx·c) / c(ctx)                                   if c(ctx·c) > 0
                 = β(ctx) · P_{n-1}(c | ctx[1:]) / Σ_{w unseen} P_{n-1}(w | ctx[1:])   otherwise,
    β(ctx) = 1 − Σ_{w seen} c(ctx·w) / c(ctx)                         (eq. 93–94)

where ``c(ctx)`` counts *every* occurrence of the (n−1)-gram, including those followed by nothing (string
ends, the end of the current partial string): that reserves the back-off mass. Order 1 is
``c(w) / Σ c`` with the ``_`` tokens in the total. Only letters seen in the (unpadded) corpus get mass;
if no seen letter is unseen after ctx, β is lost and the row sums to less than 1.

``normalized`` — maximum likelihood over the letters seen after ctx, backing off to order ``n − 1``
only when ctx has no letter continuation; order 1 is the unigram distribution over letters.

The implementation is incremental: one pass over the instance maintains the k-gram counts and records,
per position, the continuation counts of each back-off context; the back-off is then computed for all
positions at once, in O(T · n · |alphabet|).
"""

from __future__ import annotations

import numpy as np

try:
    from ._ngram_counts_numba import MAX_ORDER, context_counts_kernel
except ImportError:  # numba is missing: the Python pass
    MAX_ORDER, context_counts_kernel = 0, None

NUM_LETTERS, VOCAB_SIZE = 18, 20  # letters a..r occupy ids 1..18 of the RegBench vocabulary
VARIANTS = ("paper", "normalized")


def context_counts(text: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-position continuation counts of every back-off context (see :func:`context_counts_reference`).

    The compiled pass (`_ngram_counts_numba`) where numba is installed and n ≤ 5; the Python reference otherwise.
    """
    if context_counts_kernel is None or n > MAX_ORDER:
        return context_counts_reference(text, n)
    steps = max(len(text) - 1, 0)
    codes = np.frombuffer(text[:steps].encode("ascii"), dtype=np.uint8).astype(np.int64) - ord("a")
    codes[codes == ord("|") - ord("a")] = -1
    cont_out = np.zeros((steps, n, NUM_LETTERS), dtype=np.int64)  # (T-1, n, 18)
    ctx_out = np.zeros((steps, n), dtype=np.int64)  # (T-1, n)
    context_counts_kernel(codes, n, cont_out, ctx_out)
    return cont_out, ctx_out


def context_counts_reference(text: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-position continuation counts of every back-off context, from one incremental pass.

    Args:
        text: a RegBench problem instance (letters ``a``..``r`` and ``|``).
        n: n-gram order (>= 1).

    Returns:
        ``(cont, ctx_count)``: ``cont[t, k, c]`` = count of ``ctx_k · c`` and ``ctx_k_count[t, k]`` = count of
        ``ctx_k`` in the padded corpus of ``text[: t + 1]``, where ``ctx_k`` is the last ``k`` symbols of the
        padded current string (for ``k = 0`` the count is the total number of unigram tokens).
        Shapes ``(T - 1, n, 18)`` and ``(T - 1, n)``.
    """
    pad = n - 1
    steps = max(len(text) - 1, 0)
    cont_out = np.zeros((steps, n, NUM_LETTERS), dtype=np.int64)  # (T-1, n, 18)
    ctx_out = np.zeros((steps, n), dtype=np.int64)  # (T-1, n)
    zero = np.zeros(NUM_LETTERS, dtype=np.int64)
    cont: dict[str, np.ndarray] = {}  # context (0..n-1 symbols) -> letter continuation counts
    grams: dict[str, int] = {}  # k-gram (1..n-1 symbols) -> occurrences, followed by anything or nothing
    total = 0  # unigram tokens, '_' included

    def start_string() -> None:  # the new (empty) string's padding is part of the corpus at once
        nonlocal total
        for j in range(1, pad + 1):
            grams["_" * j] = grams.get("_" * j, 0) + pad - j + 1
        total += pad

    window = "_" * pad  # last n-1 symbols of the padded current string
    start_string()
    for t, ch in enumerate(text[:steps]):
        if ch == "|":
            start_string()
            window = "_" * pad
        else:
            c = ord(ch) - ord("a")
            for k in range(n):  # the k-gram context ending here, continued by ch
                ctx = window[pad - k :]
                row = cont.get(ctx)
                if row is None:
                    row = cont[ctx] = np.zeros(NUM_LETTERS, dtype=np.int64)
                row[c] += 1
                if k < pad:
                    grams[ctx + ch] = grams.get(ctx + ch, 0) + 1
            total += 1
            window = (window + ch)[1:] if pad else ""
        ctx_out[t, 0] = total
        cont_out[t, 0] = cont.get("", zero)
        for k in range(1, n):
            ctx = window[pad - k :]
            cont_out[t, k] = cont.get(ctx, zero)
            ctx_out[t, k] = grams[ctx]
    return cont_out, ctx_out


def paper_backoff(cont: np.ndarray, ctx_count: np.ndarray) -> np.ndarray:
    """Algorithm 1 back-off with reserved mass, vectorised over positions (see module docstring).

    Args:
        cont: ``(T, n, 18)`` continuation counts from :func:`context_counts`.
        ctx_count: ``(T, n)`` context counts.

    Returns:
        ``(T, 18)`` letter probabilities (rows may sum to less than 1).
    """
    vocab = cont[:, 0] > 0  # (T, A) letters seen in the corpus
    denom = np.maximum(ctx_count, 1)[:, :, None]  # (T, n, 1)
    p = cont[:, 0] / denom[:, 0]  # (T, A) order 1, '_' tokens in the total
    for k in range(1, cont.shape[1]):
        seen = cont[:, k] > 0  # (T, A)
        ratio = cont[:, k] / denom[:, k]  # (T, A)
        beta = 1.0 - np.where(seen, ratio, 0.0).sum(axis=1, keepdims=True)  # (T, 1)
        unseen = vocab & ~seen  # (T, A)
        z = np.where(unseen, p, 0.0).sum(axis=1, keepdims=True)  # (T, 1)
        backed = np.where(unseen, beta * p / np.where(z > 0, z, 1.0), 0.0)  # (T, A)
        p = np.where(seen, ratio, backed)
    return p


def normalized_backoff(cont: np.ndarray) -> np.ndarray:
    """Maximum likelihood at the highest order whose context has a letter continuation.

    Args:
        cont: ``(T, n, 18)`` continuation counts from :func:`context_counts`.

    Returns:
        ``(T, 18)`` letter probabilities, each row summing to 1.
    """
    totals = cont.sum(axis=2, keepdims=True)  # (T, n, 1)
    ml = cont / np.maximum(totals, 1)  # (T, n, A)
    p = ml[:, 0]  # (T, A) unigram over letters; the corpus always holds a letter
    for k in range(1, cont.shape[1]):
        p = np.where(totals[:, k] > 0, ml[:, k], p)
    return p


def check_regbench_text(text, name: str = "text") -> None:
    """Refuse what is not a RegBench problem instance, naming the argument (`name`).

    Raises:
        TypeError: `text` is not a string (a list of them goes to a batch method).
        ValueError: it is empty or holds characters other than ``a``..``r`` and ``|``.
    """
    if not isinstance(text, str):
        raise TypeError(f"{name} is a {type(text).__name__} ({text!r:.60}), expected a str (letters a..r and '|')")
    if not text:
        raise ValueError(f"{name} is empty: expected a RegBench problem instance (letters a..r joined by '|')")
    bad = set(text) - set("abcdefghijklmnopqr|")
    if bad:
        raise ValueError(f"{name} contains {sorted(bad)!r}: only a..r and '|' are allowed")


class InContextNGram:
    """In-context n-gram baseline for RegBench (P1 Appendix C.1).

    Args:
        n: n-gram order, any ``n >= 1``.
        variant: ``"paper"`` (the authors' reserved-mass back-off, their published numbers) or
            ``"normalized"`` (maximum likelihood, back-off only without a continuation).
    """

    def __init__(self, n: int, variant: str = "paper"):
        if not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"n={n!r} is not allowed: expected an integer >= 1")
        if variant not in VARIANTS:
            raise ValueError(f"variant={variant!r} is not one of: {', '.join(VARIANTS)}")
        self.n, self.variant = int(n), variant

    def predict_proba(self, text: str) -> np.ndarray:
        """Next-token distributions after every prefix ``text[: i + 1]``.

        Args:
            text: a RegBench problem instance (letters ``a``..``r`` joined by ``|``).

        Returns:
            Array of shape ``(len(text) - 1, 20)`` in ``REGBENCH_VOCAB`` order; ``.``, ``|`` get 0.
        """
        check_regbench_text(text)
        cont, ctx_count = context_counts(text, self.n)
        letters = paper_backoff(cont, ctx_count) if self.variant == "paper" else normalized_backoff(cont)
        out = np.zeros((letters.shape[0], VOCAB_SIZE))  # (T-1, V)
        out[:, 1 : 1 + NUM_LETTERS] = letters
        return out

    def __repr__(self) -> str:
        return f"InContextNGram(n={self.n}, variant={self.variant!r})"
