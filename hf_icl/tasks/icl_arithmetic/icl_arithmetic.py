"""ICL arithmetic (P3, Learning Fast and Slow, §4.1 and App. D; DESIGN §4, §5.7.9): several linear tasks per sequence.

A sequence holds `n_tasks` tasks, each with hidden floats a ~ U[0, 10), b ~ U[−9, 10), shown through `n_ex` examples

    AAA*BBB=±RRRRR|      R = trunc(a·A + b·B) (toward zero), sign always written, |R| zero-padded to d + 2 digits

with A, B uniform d-digit integers (leading zeros; d = 3) and `#` after each task's last example, e.g. the paper's
`154*709=+07058|648*011=+05920|526*187=+06230|893*495=+11997|#` (App. D). A model must infer (a, b) in context;
the metric is next-token accuracy on the answer digits of the last 2 examples of each task. Rows store the (a, b) of
every task, so each answer can be recomputed exactly (`check_row`).

Splits come from `default_rng([seed, stream])` (train 0, test 1, validation 2); training can also draw fresh rows
every step (`ICLArithmeticSampler`, the paper's setting).
"""

from __future__ import annotations

import dataclasses
import math
import re

import datasets
import numpy as np
import torch

from ..builder import ValidatedBuilder, check_counts, split_stream
from ..online import OnlineSampler

CITATION = """@inproceedings{zhmoginov2024fastslow,
  title={Learning Fast and Slow: Representations for In-Context Weight Modulation},
  author={Zhmoginov, Andrey and Lee, Jihwan and Vladymyrov, Max and Sandler, Mark},
  booktitle={ICML Workshop on In-Context Learning}, year={2024}}"""
"""BibTeX of P3."""

_VERSION = datasets.Version("1.0.0")  # bump whenever sampling changes
A_RANGE, B_RANGE = (0.0, 10.0), (-9.0, 10.0)
SCORED_EXAMPLES = 2
"""The metric scores the answer digits of this many last examples of every task (P3 §4.2)."""
EXAMPLE = re.compile(r"(\d+)\*(\d+)=([+-])(\d+)\|")


@dataclasses.dataclass
class ICLArithmeticConfig(datasets.BuilderConfig):
    """One ICL-arithmetic variant.

    Args:
        n_tasks: tasks per sequence.
        n_ex: examples per task.
        digits: d, the digits of A and B (the answer has d + 2).
        n_train, n_validation, n_test: sequences per split.
        seed: the only source of randomness.
    """

    n_tasks: int = 4
    n_ex: int = 4
    digits: int = 3
    n_train: int = 20000
    n_validation: int = 500
    n_test: int = 1000
    seed: int = 0

    @property
    def example_length(self) -> int:
        """Characters of one example: `AAA*BBB=±RRRRR|`."""
        return 2 * self.digits + 2 + 1 + (self.digits + 2) + 1

    @property
    def sequence_length(self) -> int:
        return self.n_tasks * (self.n_ex * self.example_length + 1)


CONFIG_FIELDS: tuple[str, ...] = ("n_tasks", "n_ex", "digits", "n_train", "n_validation", "n_test", "seed")
"""Keyword overrides accepted by the builder (and ``load_task("icl_arithmetic", ...)``)."""


def validate_config(config: ICLArithmeticConfig) -> None:
    """Raises ``ValueError`` naming the field, the value and what is allowed."""
    check_counts(config, ("n_train", "n_validation", "n_test", "seed"))
    for name, lowest in (("n_tasks", 1), ("n_ex", SCORED_EXAMPLES + 1), ("digits", 1)):
        value = getattr(config, name)
        if not isinstance(value, int) or value < lowest:
            raise ValueError(f"{name}={value!r} is not allowed: expected an integer >= {lowest}")


def format_example(a_operand: int, b_operand: int, result: int, digits: int) -> str:
    """`AAA*BBB=±RRRRR|` for one example."""
    sign = "+" if result >= 0 else "-"
    return f"{a_operand:0{digits}d}*{b_operand:0{digits}d}={sign}{abs(result):0{digits + 2}d}|"


def sample_rows(rng: np.random.Generator, count: int, n_tasks: int, n_ex: int, digits: int) -> list[dict]:
    """`count` rows: `text`, and `a`, `b` (one float per task).

    Args:
        rng: the generator (the only randomness).
        count, n_tasks, n_ex, digits: as in :class:`ICLArithmeticConfig`.
    """
    a = rng.uniform(*A_RANGE, size=(count, n_tasks))  # (N, tasks)
    b = rng.uniform(*B_RANGE, size=(count, n_tasks))
    operands = rng.integers(0, 10**digits, size=(count, n_tasks, n_ex, 2))  # (N, tasks, ex, 2)
    results = np.trunc(a[..., None] * operands[..., 0] + b[..., None] * operands[..., 1]).astype(np.int64)
    rows = []
    for n in range(count):
        tasks = [
            "".join(
                format_example(int(operands[n, t, e, 0]), int(operands[n, t, e, 1]), int(results[n, t, e]), digits)
                for e in range(n_ex)
            )
            + "#"
            for t in range(n_tasks)
        ]
        rows.append({"text": "".join(tasks), "a": a[n].tolist(), "b": b[n].tolist()})
    return rows


def check_row(row: dict, digits: int = 3) -> bool:
    """Whether every example of `row["text"]` equals trunc(a·A + b·B) for its task's stored (a, b)."""
    for t, task in enumerate(row["text"].split("#")[:-1]):
        for match in EXAMPLE.finditer(task):
            a_operand, b_operand, sign, value = match.groups()
            expected = math.trunc(row["a"][t] * int(a_operand) + row["b"][t] * int(b_operand))
            if len(a_operand) != digits or len(value) != digits + 2:
                return False
            if int(sign + value) != expected or (sign == "-") != (expected < 0):
                return False
    return True


def answer_positions(config: ICLArithmeticConfig, examples=None) -> np.ndarray:
    """Character positions of the answer digits of the given examples (0-based, within every task), sorted.

    Args:
        config: the sequence layout.
        examples: example indices; default the last :data:`SCORED_EXAMPLES` (the metric's positions).
    """
    if examples is None:
        examples = range(config.n_ex - SCORED_EXAMPLES, config.n_ex)
    length, task_length = config.example_length, config.n_ex * config.example_length + 1
    first_digit = 2 * config.digits + 3  # after `AAA*BBB=±`
    positions = [
        t * task_length + e * length + first_digit + k
        for t in range(config.n_tasks)
        for e in examples
        for k in range(config.digits + 2)
    ]
    return np.array(positions, dtype=np.int64)


def least_squares_predictions(row: dict, config: ICLArithmeticConfig) -> str:
    """The text with every answer replaced by the least-squares fit of (a, b) to the task's earlier examples.

    The reference point of what the examples determine: example j of a task is answered with â·A + b̂·B rounded,
    (â, b̂) fitted to the (truncated) answers of examples 0 … j − 1 (minimum-norm for j < 2; zero for j = 0).
    """
    out = []
    for task in row["text"].split("#")[:-1]:
        examples = [tuple(int(g) if i != 2 else g for i, g in enumerate(m.groups())) for m in EXAMPLE.finditer(task)]
        seen_x, seen_y = [], []
        for a_operand, b_operand, sign, value in examples:
            if seen_x:
                coefficients = np.linalg.lstsq(np.array(seen_x, float), np.array(seen_y, float), rcond=None)[0]
                guess = round(float(coefficients @ np.array([a_operand, b_operand], float)))
            else:
                guess = 0
            limit = 10 ** (config.digits + 2) - 1
            out.append(format_example(a_operand, b_operand, max(-limit, min(limit, guess)), config.digits))
            seen_x.append([a_operand, b_operand])
            seen_y.append(int(sign + str(value)))
        out.append("#")
    return "".join(out)


class ICLArithmeticSampler(OnlineSampler):
    """Fresh rows every step (P3 trains on newly sampled sequences): `input_ids` and `labels` (B, T).

    Args:
        config: the :class:`ICLArithmeticConfig` whose `n_tasks`, `n_ex`, `digits` it samples.
        vocab: the tokenizer's vocabulary (character -> id).
    """

    def __init__(self, config: ICLArithmeticConfig, vocab: dict[str, int]):
        super().__init__(n_tasks=config.n_tasks, n_ex=config.n_ex, digits=config.digits)
        self.lookup = np.zeros(128, dtype=np.int64)
        for char, index in vocab.items():
            if len(char) == 1 and ord(char) < 128:
                self.lookup[ord(char)] = index

    def sample_batch(self, batch_size: int, rng: np.random.Generator) -> dict:
        rows = sample_rows(rng, batch_size, self.params["n_tasks"], self.params["n_ex"], self.params["digits"])
        codes = np.frombuffer("".join(row["text"] for row in rows).encode("ascii"), dtype=np.uint8)
        ids = torch.from_numpy(self.lookup[codes].reshape(batch_size, -1))  # (B, T)
        return {"input_ids": ids, "labels": ids.clone()}


class ICLArithmeticBuilder(ValidatedBuilder):
    """``datasets`` builder for ICL arithmetic (P3 §4.1). Instantiate it from the package.

    Args:
        config_name: `default` (4 tasks × 4 examples) or `single_task` (1 task × 8 examples), P3 App. D.1.
        cache_dir: the ``datasets`` cache directory.
        **config_kwargs: overrides of :class:`ICLArithmeticConfig` fields.
    """

    VERSION = _VERSION
    BUILDER_CONFIG_CLASS = ICLArithmeticConfig
    BUILDER_CONFIGS = [
        ICLArithmeticConfig(name="default", version=_VERSION, description="4 tasks × 4 examples (P3 §4.2)"),
        ICLArithmeticConfig(
            name="single_task", version=_VERSION, n_tasks=1, n_ex=8, description="1 task × 8 examples (P3 App. D.2)"
        ),
    ]
    DEFAULT_CONFIG_NAME = "default"
    validate_config = staticmethod(validate_config)
    SPLIT_SIZE_FIELDS = ("n_validation", "n_test")  # n_train may be 0: training samples online

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description="Sequences of in-context linear-combination tasks (P3 §4.1, App. D).",
            features=datasets.Features(
                {
                    "text": datasets.Value("string"),
                    "a": datasets.List(datasets.Value("float64")),
                    "b": datasets.List(datasets.Value("float64")),
                }
            ),
            citation=CITATION,
        )

    def _generate_examples(self, split: str):
        config = self.config
        count = {"train": config.n_train, "validation": config.n_validation, "test": config.n_test}[split]
        rng = np.random.default_rng(split_stream(config.seed, split))
        for i, row in enumerate(sample_rows(rng, count, config.n_tasks, config.n_ex, config.digits)):
            yield datasets.builder.Key(0, i), row
