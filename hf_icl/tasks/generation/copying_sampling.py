"""Samplers of P4's copy and n-gram lookup tasks (Repeat After Me §3, Fig. 2, 4, 5, 6; DESIGN §4, §5.6).

Strings are uniform over the first ``alphabet_size`` letters of a–z (P4 §3.1). Formats, with ``$`` = BOS,
``|`` = separator, ``.`` = EOS:

- copy: ``$ s | s .``;
- copy with a duplicated n-gram (§3.4): ``s`` has one n-gram copied over another place of ``s``;
- suffix-key lookup (§3.5, Fig. 5): ``$ s | g ans .``; prefix-key lookup (Fig. 6): ``$ g | s | ans .``, where the
  key ``g`` is an n-gram that occurs *exactly once* in ``s`` and ``ans`` is what follows it (the reference samples
  keys that may repeat; unique keys make the answer well defined).

Training contexts are packed (§3.1, App. A.2, reference ``CopyDataset``): whole examples are appended while they
fit into ``context_len`` characters; the next one is cut at the context's end and gets no loss.
All randomness comes from the caller's ``numpy`` generator.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator

import numpy as np

from .tokenizers import COPY_BOS as BOS
from .tokenizers import COPY_EOS as EOS
from .tokenizers import COPY_SEP as SEP

LETTERS = "abcdefghijklmnopqrstuvwxyz"


@dataclasses.dataclass(frozen=True)
class Example:
    """One formatted example.

    Args:
        text: the example's characters, EOS included.
        answer_start: index of the answer's first character in ``text``.
        length: ``|s|``.
        ngram: duplicated n (copy_dup_ngram), key length (lookups) or 0 (copy).
    """

    text: str
    answer_start: int
    length: int
    ngram: int = 0

    @property
    def answer_end(self) -> int:
        """Index of the EOS after the answer."""
        return len(self.text) - 1


def uniform_string(rng: np.random.Generator, length: int, alphabet_size: int = 26) -> str:
    """``length`` i.i.d. uniform letters among the first ``alphabet_size`` of a–z."""
    return "".join(LETTERS[i] for i in rng.integers(0, alphabet_size, size=length).tolist())


def copy_example(s: str, ngram: int = 0) -> Example:
    """``$ s | s .``"""
    return Example(f"{BOS}{s}{SEP}{s}{EOS}", len(s) + 2, len(s), ngram)


def duplicate_ngram(rng: np.random.Generator, length: int, n: int, alphabet_size: int = 26) -> str:
    """A uniform string in which one n-gram has been copied over another, non-overlapping place.

    The two copies are followed by different letters and, where both have one, preceded by different letters, so
    the planted repeat is exactly ``n`` long and an n-gram lookup cannot tell which copy it is in (P4 §3.4 says the
    copies are "typically followed by a different token"; we make that certain). Draws are rejected until this holds.

    Args:
        rng: the only source of randomness.
        length: string length, at least ``2 n + 1``.
        n: length of the duplicated n-gram.
        alphabet_size: letters used (at least 2).
    """
    while True:
        x = list(uniform_string(rng, length, alphabet_size))
        source, target = rng.integers(0, length - n, size=2).tolist()  # both copies keep a successor
        if abs(source - target) < n:
            continue
        x[target : target + n] = x[source : source + n]
        if x[source + n] == x[target + n]:
            continue
        if min(source, target) > 0 and x[source - 1] == x[target - 1]:
            continue
        return "".join(x)


def longest_repeat_with_different_successors(s: str) -> int:
    """Largest ``n`` such that some n-gram of ``s`` occurs twice followed by different letters (0 if none).

    An n-gram copier (P4 Algorithm 1) of order ``m`` copies ``s`` exactly iff this is smaller than ``m``.
    """
    best = 0
    for n in range(1, len(s)):
        successors: dict[str, set[str]] = {}
        for i in range(len(s) - n):
            successors.setdefault(s[i : i + n], set()).add(s[i + n])
        if any(len(follow) > 1 for follow in successors.values()):
            best = n
        else:
            break  # a longer ambiguous n-gram would contain an ambiguous shorter suffix
    return best


def unique_key_positions(s: str, n: int, answer_length: int) -> list[int]:
    """Starts ``p`` of n-grams that occur exactly once in ``s`` and leave room for the answer after them.

    Args:
        s: the string.
        n: key length.
        answer_length: answer length (0: the rest of ``s``, at least one letter).
    """
    counts = Counter(s[i : i + n] for i in range(len(s) - n + 1))
    last = len(s) - n - max(answer_length, 1)
    return [p for p in range(last + 1) if counts[s[p : p + n]] == 1]


def lookup_example(
    rng: np.random.Generator, task: str, length: int, n: int, answer_length: int, alphabet_size: int = 26
) -> Example:
    """A suffix- or prefix-key lookup example whose key occurs exactly once in ``s``.

    Args:
        rng: the only source of randomness.
        task: ``lookup_suffix`` or ``lookup_prefix``.
        length: ``|s|``, at least ``n + max(answer_length, 1)``.
        n: key length.
        answer_length: letters to return after the key (0: the rest of ``s``).
        alphabet_size: letters used.

    Raises:
        LookupError: the drawn ``s`` has no such key (the caller draws again).
    """
    s = uniform_string(rng, length, alphabet_size)
    positions = unique_key_positions(s, n, answer_length)
    if not positions:
        raise LookupError(f"no {n}-gram occurs exactly once in {s!r}")
    p = positions[int(rng.integers(0, len(positions)))]
    key, rest = s[p : p + n], s[p + n :]
    answer = rest[:answer_length] if answer_length else rest
    prompt = f"{BOS}{s}{SEP}{key}" if task == "lookup_suffix" else f"{BOS}{key}{SEP}{s}{SEP}"
    return Example(prompt + answer + EOS, len(prompt), length, n)


def pack(examples: Iterator[Example], context_len: int) -> dict:
    """Fills one training context (reference ``CopyDataset``): whole examples, then the cut-off next one.

    Args:
        examples: endless stream of examples, each at most ``context_len`` long.
        context_len: characters per context.

    Returns:
        A span row (:func:`~hf_icl.tasks.generation.generative.span_features` with ``ngrams``) of exactly
        ``context_len`` characters whose spans cover the complete examples only.
    """
    text, row = "", {"answer_starts": [], "answer_ends": [], "lengths": [], "ngrams": []}
    while len(text) < context_len:
        example = next(examples)
        if len(text) + len(example.text) > context_len:
            text += example.text[: context_len - len(text)]  # the truncated example: no loss
            break
        row["answer_starts"].append(len(text) + example.answer_start)
        row["answer_ends"].append(len(text) + example.answer_end)
        row["lengths"].append(example.length)
        row["ngrams"].append(example.ngram)
        text += example.text
    return {"text": text, **row}


def single(example: Example) -> dict:
    """A span row holding one example (validation and test rows)."""
    return {
        "text": example.text,
        "answer_starts": [example.answer_start],
        "answer_ends": [example.answer_end],
        "lengths": [example.length],
        "ngrams": [example.ngram],
    }
