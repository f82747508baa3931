"""Reference algorithms for the copying and retrieval tasks, evaluated exactly like models (DESIGN §2.3).

- :class:`NGramCopier`: P4 (Repeat After Me) Algorithm 1, hash-based copying with n-gram keys. The first ``n``
  output letters are copied by position; afterwards the last ``n`` outputs are looked up among the n-grams of the
  input and the letter that followed them is emitted. The hash is exact (a dict), and when an n-gram occurs more than
  once the *first* occurrence wins (Algorithm 1 leaves the choice open). It copies a string exactly iff no n-gram of
  it occurs twice with different successors; its accuracy curves are P4 Fig. 11's "perfect n-gram models".
- :class:`LookupOracle`: the exact answer of a retrieval task, found by looking the query up in the prompt
  (no access to the answer) with the task's solver: the ceiling of the curves. The solvers of the copy, lookup,
  phone-book, associative-recall and MQAR formats are here (``*_answer``); each task declares its own in its
  ``TaskEntry.solver``.

Both implement ``generate(prompts, max_new_tokens) -> continuations``, the same text a model's greedy generation
returns (EOS included where the task has one), so the generation evaluator scores them with the model's scorer.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable

COPY_BOS, COPY_SEP, COPY_EOS = "$", "|", "."
"""P4's copy format ``$ s | s .`` (BOS, separator, EOS), as its tasks' tokenizer spells it."""


class NGramCopier:
    """P4 Algorithm 1 with n-gram keys, on the copy format ``$ s |``.

    Args:
        n: key length (>= 1).
    """

    def __init__(self, n: int):
        if n < 1:
            raise ValueError(f"n={n} is not allowed: expected n >= 1")
        self.n = n

    def copy(self, x: str) -> str:
        """Algorithm 1 on ``x``: returns ``y`` with ``len(y) <= len(x)`` (shorter if a query has no match)."""
        n, table = self.n, {}
        for i in range(n, len(x)):  # k_i = s(x_{i-n} .. x_{i-1}), v_i = x_i; the first occurrence wins
            table.setdefault(x[i - n : i], x[i])
        y = list(x[:n])
        while len(y) < len(x):
            nxt = table.get("".join(y[-n:]))
            if nxt is None:
                break
            y.append(nxt)
        return "".join(y)

    def generate(self, prompts: list[str], max_new_tokens: int) -> list[str]:
        """Continuations of copy prompts (``... $ s |``): the copy of the last ``s``, then the EOS.

        Args:
            prompts: prompts ending with the separator.
            max_new_tokens: longest continuation returned.
        """
        return [(self.copy(p.rsplit(COPY_BOS, 1)[1][:-1]) + COPY_EOS)[:max_new_tokens] for p in prompts]

    def __repr__(self) -> str:
        return f"NGramCopier(n={self.n})"


def copy_answer(prompt: str, answer_length: int) -> str:
    """The copy of the last string of a copy prompt ``... $ s |``."""
    return prompt.rsplit(COPY_BOS, 1)[1][:-1]


def _after_unique_key(s: str, key: str, answer_length: int) -> str:
    rest = s[s.index(key) + len(key) :]
    return rest[:answer_length] if answer_length else rest


def lookup_suffix_answer(prompt: str, answer_length: int) -> str:
    """What follows the key ``g`` in ``s`` for a prompt ``... $ s | g`` (all of it when ``answer_length`` is 0)."""
    s, key = prompt.rsplit(COPY_BOS, 1)[1].split(COPY_SEP)
    return _after_unique_key(s, key, answer_length)


def lookup_prefix_answer(prompt: str, answer_length: int) -> str:
    """What follows the key ``g`` in ``s`` for a prompt ``... $ g | s |`` (all of it when ``answer_length`` is 0)."""
    key, s, _ = prompt.rsplit(COPY_BOS, 1)[1].split(COPY_SEP)
    return _after_unique_key(s, key, answer_length)


def phonebook_answer(prompt: str, answer_length: int) -> str:
    """The number of the book line that starts with the prompt's last line ``First Last: ``."""
    lines = prompt.split("\n")
    query = lines[-1]  # "First Last: "
    return next(line[len(query) :] for line in lines[:-1] if line.startswith(query))


def associative_recall_answer(prompt: str, answer_length: int) -> str:
    """The value after the last occurrence of the queried key in ``k1 v1 … kn vn > kq``."""
    body, key = prompt[:-2], prompt[-1]  # "k1 v1 ... kn vn", ">", "kq"
    return body[max(i for i in range(0, len(body), 2) if body[i] == key) + 1]


def mqar_answer(prompt: str, answer_length: int) -> str:
    """The value of the queried key (the prompt's last token) in MQAR's leading key-value block."""
    key = prompt[-1]  # keys are distinct in the key-value block, which comes first
    return prompt[next(i for i in range(0, len(prompt) - 1, 2) if prompt[i] == key) + 1]


class LookupOracle:
    """Exact answers of a retrieval task, read off the prompt by its solver.

    Args:
        solve: ``(prompt, answer_length) -> answer`` (a task's ``TaskEntry.solver``, e.g. :func:`copy_answer`).
            A task name is still accepted, deprecated: its registered solver is used.
        eos: the task's answers end with the EOS ``.``.
        answer_length: lookups: letters returned after the key (0: the rest of the string).
    """

    def __init__(self, solve: Callable[[str, int], str] | str, eos: bool = True, answer_length: int = 0):
        if isinstance(solve, str):
            warnings.warn(
                "LookupOracle(task_name) is deprecated: pass the task's solver, LookupOracle(task_entry(name).solver, "
                "eos, answer_length)",
                FutureWarning,
                stacklevel=2,
            )
            # the deprecated path reads the task registry, above the baselines: looked up by name, on use only
            entry = importlib.import_module("hf_icl.tasks").task_entry(solve)
            solve, eos = entry.solver, entry.spec.eos
        self.solve, self.eos, self.answer_length = solve, eos, answer_length

    def generate(self, prompts: list[str], max_new_tokens: int) -> list[str]:
        """The exact continuation of every prompt (then the EOS, for tasks that end answers with one).

        Args:
            prompts: the task's prompts.
            max_new_tokens: longest continuation returned.
        """
        suffix = COPY_EOS if self.eos else ""
        return [(self.solve(p, self.answer_length) + suffix)[:max_new_tokens] for p in prompts]

    def __repr__(self) -> str:
        return f"LookupOracle({getattr(self.solve, '__name__', self.solve)})"
