"""The regular languages of RegularGPT (P2 §5.1, Table 1; §5.3) with the semantics of DESIGN §5.4.

Two kinds of task share this module:

- **Transduction** (Delétang et al.; the first section of P2 Table 1): inputs are i.i.d. symbols and the output is
  one class for the whole string. :data:`TRANSDUCTION_LANGUAGES` holds each alphabet and vectorised labeler;
  :func:`sample_transduction` draws inputs and labels for one length.
- **Recognition** (Bhattamishra et al.; the second section of Table 1), evaluated as RegularGPT does: balanced
  positive and negative strings of one exact length. Every language is a DFA over {0, 1}
  (:data:`RECOGNITION_LANGUAGES`), and :class:`ExactLengthSampler` draws strings *uniformly* among those of a
  given length in (or not in) the language, by counting accepting paths.

Symbols are small integers here; the builder in :mod:`hf_icl.tasks.formal_language.regular_languages` turns them
into characters.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

# ---------------------------------------------------------------------------------------------- transduction

_ADD, _SUB, _MUL = 5, 6, 7  # operator ids in modular arithmetic, after the digits 0..4


def even_pairs_labels(x: np.ndarray) -> np.ndarray:
    """1 iff the number of 01/10 transitions is odd, i.e. the first symbol differs from the last.

    Args:
        x: ``(B, L)`` array over {0, 1}, ``L >= 1``.

    Returns:
        ``(B,)`` int64 labels.
    """
    return (x[:, 0] != x[:, -1]).astype(np.int64)


def parity_labels(x: np.ndarray) -> np.ndarray:
    """Number of 1s mod 2.

    Args:
        x: ``(B, L)`` array over {0, 1}.

    Returns:
        ``(B,)`` int64 labels.
    """
    return x.sum(axis=1, dtype=np.int64) % 2


def cycle_navigation_labels(x: np.ndarray) -> np.ndarray:
    """Position on a cycle of 5 after the moves, starting at 0; tokens 0, 1, 2 move −1, 0, +1.

    Args:
        x: ``(B, L)`` array over {0, 1, 2}.

    Returns:
        ``(B,)`` int64 labels in 0..4.
    """
    return (x.astype(np.int64) - 1).sum(axis=1) % 5


def modular_arithmetic_labels(x: np.ndarray) -> np.ndarray:
    """Value mod 5 of ``d op d op … d``: ``*`` binds tighter, ``+`` and ``-`` are left-associative.

    One left-to-right pass keeps ``total + sign * term`` (all mod 5): ``*`` multiplies the open term, ``+``/``-``
    closes it into the total and opens a new one.

    Args:
        x: ``(B, L)`` array, ``L`` odd: digits 0..4 at even positions, operators 5 (+), 6 (−), 7 (*) at odd ones.

    Returns:
        ``(B,)`` int64 labels in 0..4 (non-negative residues).
    """
    digits, ops = x[:, 0::2].astype(np.int64), x[:, 1::2]  # (B, (L+1)/2), (B, (L-1)/2)
    total = np.zeros(len(x), dtype=np.int64)  # (B,)
    sign = np.ones(len(x), dtype=np.int64)
    term = digits[:, 0].copy()
    for j in range(ops.shape[1]):
        mul = ops[:, j] == _MUL
        total = np.where(mul, total, (total + sign * term) % 5)
        sign = np.where(mul, sign, np.where(ops[:, j] == _ADD, 1, -1))
        term = np.where(mul, term * digits[:, j + 1] % 5, digits[:, j + 1])
    return (total + sign * term) % 5


@dataclasses.dataclass(frozen=True)
class TransductionLanguage:
    """A transduction task: characters of the symbol ids, the labeler, and which lengths exist.

    Args:
        alphabet: character of symbol id ``i`` at position ``i``.
        labeler: ``(B, L)`` symbol ids -> ``(B,)`` class ids.
        num_classes: number of output classes (answers are the digits ``0 .. num_classes - 1``).
        odd_lengths_only: only odd lengths are well-formed (modular arithmetic).
    """

    alphabet: str
    labeler: Callable[[np.ndarray], np.ndarray]
    num_classes: int
    odd_lengths_only: bool = False


TRANSDUCTION_LANGUAGES: dict[str, TransductionLanguage] = {
    "even_pairs": TransductionLanguage("01", even_pairs_labels, 2),
    "parity_check": TransductionLanguage("01", parity_labels, 2),
    "cycle_navigation": TransductionLanguage("012", cycle_navigation_labels, 5),
    "modular_arithmetic": TransductionLanguage("01234+-*", modular_arithmetic_labels, 5, odd_lengths_only=True),
    "parity_p": TransductionLanguage("01", parity_labels, 2),  # P2 §5.3: P(1) = p_one instead of 1/2
}
"""Transduction task name -> :class:`TransductionLanguage`."""


def sample_transduction(
    name: str, rng: np.random.Generator, length: int, n: int, p_one: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Draws ``n`` inputs of one length, each symbol i.i.d. (uniform unless ``p_one`` is given), and their labels.

    Args:
        name: a key of :data:`TRANSDUCTION_LANGUAGES`.
        rng: the only source of randomness.
        length: string length (odd for modular arithmetic).
        n: number of strings.
        p_one: ``parity_p`` only: probability that a bit is 1.

    Returns:
        ``(x, labels)``: ``(n, length)`` uint8 symbol ids and ``(n,)`` int64 class ids.
    """
    language = TRANSDUCTION_LANGUAGES[name]
    if name == "parity_p":
        x = (rng.random((n, length)) < p_one).astype(np.uint8)
    elif language.odd_lengths_only:
        x = np.empty((n, length), dtype=np.uint8)  # fresh digits and operators for every sample
        x[:, 0::2] = rng.integers(0, 5, size=(n, (length + 1) // 2))
        x[:, 1::2] = _ADD + rng.integers(0, 3, size=(n, length // 2))
    else:
        x = rng.integers(0, len(language.alphabet), size=(n, length), dtype=np.uint8)
    return x, language.labeler(x)


# ----------------------------------------------------------------------------------------------- recognition


@dataclasses.dataclass(frozen=True)
class DFA:
    """Complete DFA over {0, 1} with start state 0.

    Args:
        delta: ``delta[q][a]`` is the successor of state ``q`` on symbol ``a``.
        accepting: ``accepting[q]`` is whether ``q`` accepts.
    """

    delta: tuple[tuple[int, int], ...]
    accepting: tuple[bool, ...]

    @property
    def num_states(self) -> int:
        """Number of states."""
        return len(self.delta)


def dyck_dfa(depth: int) -> DFA:
    """D_n: balanced strings over 0 = open, 1 = close with nesting depth <= n.

    States 0..n are the current depth; state n + 1 is dead (too deep, or a close with nothing open).

    Args:
        depth: maximum nesting depth n >= 1.

    Returns:
        The ``n + 2``-state DFA.
    """
    dead = depth + 1
    delta = [(d + 1 if d < depth else dead, d - 1 if d > 0 else dead) for d in range(depth + 1)]
    return DFA(tuple(delta) + ((dead, dead),), (True,) + (False,) * (depth + 1))


TOMITA_DFAS: dict[int, DFA] = {
    # 0: no pending violation, 1: odd run of 1s, 2: odd run of 0s after an odd run of 1s,
    # 3: even run of 0s after an odd run of 1s, 4: dead (an odd 0-run after an odd 1-run was closed by a 1)
    3: DFA(((0, 1), (2, 0), (3, 4), (2, 1), (4, 4)), (True, True, False, True, False)),
    # number of trailing 0s (0, 1, 2), then dead after "000"
    4: DFA(((1, 0), (2, 0), (3, 0), (3, 3)), (True, True, True, False)),
    # (#0 mod 2, #1 mod 2) as 2 * (#0 mod 2) + (#1 mod 2)
    5: DFA(((2, 1), (3, 0), (0, 3), (1, 2)), (True, False, False, False)),
    # (#0 - #1) mod 3
    6: DFA(((1, 2), (2, 0), (0, 1)), (True, False, False)),
}
"""Tomita grammar number -> DFA (DESIGN §5.4)."""

RECOGNITION_LANGUAGES: dict[str, DFA] = {f"dyck_{n}": dyck_dfa(n) for n in (2, 3, 4, 12)} | {
    f"tomita_{k}": dfa for k, dfa in TOMITA_DFAS.items()
}
"""Recognition task name -> DFA over {0, 1}."""


class ExactLengthSampler:
    """Uniform sampling of strings of one exact length inside (or outside) a DFA's language.

    ``N_r(q)`` = number of strings of length ``r`` leading from ``q`` to an accepting state (exact Python
    integers, so no overflow at any length). Walking from the start with ``r`` symbols left, symbol ``a`` is taken
    with probability ``N_{r-1}(delta(q, a)) / N_r(q)``; the product over the walk is ``1 / N_L(start)`` for every
    string, i.e. uniform. Negatives use the complemented accepting set.

    Args:
        dfa: the language.
        max_length: longest length that will be sampled.
    """

    def __init__(self, dfa: DFA, max_length: int):
        self.dfa, self.max_length = dfa, max_length
        self._delta = np.asarray(dfa.delta, dtype=np.intp)  # (S, 2)
        self._counts, self._p_zero = {}, {}
        for inside in (True, False):
            counts = [[int(a == inside) for a in dfa.accepting]]  # counts[r][q] = N_r(q)
            for _ in range(max_length):
                counts.append([counts[-1][a] + counts[-1][b] for a, b in dfa.delta])
            p_zero = np.zeros((max_length + 1, dfa.num_states))  # (L+1, S) P(next symbol is 0)
            for r in range(1, max_length + 1):
                for q, (a, _) in enumerate(dfa.delta):
                    if counts[r][q]:
                        p_zero[r, q] = counts[r - 1][a] / counts[r][q]  # int / int is correctly rounded
            self._counts[inside], self._p_zero[inside] = counts, p_zero

    def count(self, length: int, in_language: bool) -> int:
        """Number of strings of exactly ``length`` symbols in (or not in) the language.

        Args:
            length: 0 .. ``max_length``.
            in_language: count members (True) or non-members (False).

        Returns:
            The exact count.
        """
        return self._counts[in_language][length][0]

    def sample(self, rng: np.random.Generator, length: int, n: int, in_language: bool) -> np.ndarray:
        """Draws ``n`` strings uniformly, independently, among those of the given length and membership.

        Args:
            rng: the only source of randomness.
            length: 1 .. ``max_length``.
            n: number of strings.
            in_language: sample members (True) or non-members (False).

        Returns:
            ``(n, length)`` uint8 array over {0, 1}.

        Raises:
            ValueError: no string of that length and membership exists.
        """
        if not 0 <= length <= self.max_length:
            raise ValueError(f"length={length} is not allowed: expected 0 <= length <= {self.max_length}")
        if n and self.count(length, in_language) == 0:
            raise ValueError(f"length={length} has no {'member' if in_language else 'non-member'} strings")
        p_zero = self._p_zero[in_language]
        state = np.zeros(n, dtype=np.intp)  # (n,)
        out = np.empty((n, length), dtype=np.uint8)
        for t in range(length):
            # p = 1.0 and p = 0.0 are exact, so a walk never enters a branch with no completions
            symbol = (rng.random(n) >= p_zero[length - t, state]).astype(np.intp)
            out[:, t] = symbol
            state = self._delta[state, symbol]
        return out

    def lengths_with_both_classes(self, lo: int, hi: int) -> list[int]:
        """Lengths in ``[lo, hi]`` that have both member and non-member strings (others cannot be balanced).

        Args:
            lo: shortest length.
            hi: longest length (<= ``max_length``).

        Returns:
            Sorted list of lengths.
        """
        return [n for n in range(lo, hi + 1) if self.count(n, True) and self.count(n, False)]
