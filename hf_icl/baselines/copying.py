"""Reference algorithms for the copying and retrieval tasks, evaluated exactly like models (DESIGN §2.3).

- :class:`NGramCopier`: P4 (Repeat After Me) Algorithm 1, hash-based copying with n-gram keys. The first ``n``
  output letters are copied by position; afterwards the last ``n`` outputs are looked up among the n-grams of the
  input and the letter that followed them is emitted. The hash is exact (a dict), and when an n-gram occurs more than
  once the *first* occurrence wins (Algorithm 1 leaves the choice open). It copies a string exactly iff no n-gram of
  it occurs twice with different successors; its accuracy curves are P4 Fig. 11's "perfect n-gram models".
- :class:`LookupOracle`: the exact answer of every retrieval task, found by looking the query up in the prompt
  (no access to the answer): the ceiling of the curves.

Both implement ``generate(prompts, max_new_tokens) -> continuations``, the same text a model's greedy generation
returns (EOS included where the task has one), so the generation evaluator scores them with the model's scorer.
"""

from __future__ import annotations

from ..tokenization import COPY_BOS, COPY_EOS, COPY_SEP


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


def _copy(prompt: str, answer_length: int) -> str:
    return prompt.rsplit(COPY_BOS, 1)[1][:-1]


def _after_unique_key(s: str, key: str, answer_length: int) -> str:
    rest = s[s.index(key) + len(key) :]
    return rest[:answer_length] if answer_length else rest


def _lookup_suffix(prompt: str, answer_length: int) -> str:
    s, key = prompt.rsplit(COPY_BOS, 1)[1].split(COPY_SEP)
    return _after_unique_key(s, key, answer_length)


def _lookup_prefix(prompt: str, answer_length: int) -> str:
    key, s, _ = prompt.rsplit(COPY_BOS, 1)[1].split(COPY_SEP)
    return _after_unique_key(s, key, answer_length)


def _phonebook(prompt: str, answer_length: int) -> str:
    lines = prompt.split("\n")
    query = lines[-1]  # "First Last: "
    return next(line[len(query) :] for line in lines[:-1] if line.startswith(query))


def _associative_recall(prompt: str, answer_length: int) -> str:
    body, key = prompt[:-2], prompt[-1]  # "k1 v1 ... kn vn", ">", "kq"
    return body[max(i for i in range(0, len(body), 2) if body[i] == key) + 1]


def _mqar(prompt: str, answer_length: int) -> str:
    key = prompt[-1]  # keys are distinct in the key-value block, which comes first
    return prompt[next(i for i in range(0, len(prompt) - 1, 2) if prompt[i] == key) + 1]


_SOLVERS = {
    "copy": (_copy, True),
    "copy_dup_ngram": (_copy, True),
    "lookup_suffix": (_lookup_suffix, True),
    "lookup_prefix": (_lookup_prefix, True),
    "phonebook": (_phonebook, True),
    "associative_recall": (_associative_recall, False),
    "mqar": (_mqar, False),
}


class LookupOracle:
    """Exact answers of a retrieval task, read off the prompt by lookup.

    Args:
        task: one of ``copy``, ``copy_dup_ngram``, ``lookup_suffix``, ``lookup_prefix``, ``phonebook``,
            ``associative_recall``, ``mqar``.
        answer_length: lookups: letters returned after the key (0: the rest of the string).
    """

    TASKS = tuple(_SOLVERS)

    def __init__(self, task: str, answer_length: int = 0):
        if task not in _SOLVERS:
            raise ValueError(f"task={task!r} is not one of: {', '.join(_SOLVERS)}")
        self.task, self.answer_length = task, answer_length
        self._solve, self._eos = _SOLVERS[task]

    def generate(self, prompts: list[str], max_new_tokens: int) -> list[str]:
        """The exact continuation of every prompt (then the EOS, for tasks that end answers with one).

        Args:
            prompts: the task's prompts.
            max_new_tokens: longest continuation returned.
        """
        suffix = COPY_EOS if self._eos else ""
        return [(self._solve(p, self.answer_length) + suffix)[:max_new_tokens] for p in prompts]

    def __repr__(self) -> str:
        return f"LookupOracle(task={self.task!r})"
