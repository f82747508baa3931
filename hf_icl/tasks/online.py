"""Online sampling: a fresh batch every optimiser step, drawn from (seed, rank, step) alone, plus curricula.

Because a batch depends only on (seed, rank, step) and the sampler's parameters at that step, and because curricula
are pure functions of the step, a run resumed from a checkpoint draws exactly the batches an uninterrupted run
would (P5 and Garg et al. train this way: a new task per sequence per step).
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Iterator

import numpy as np
from torch.utils.data import IterableDataset


def step_rng(seed: int, rank: int, step: int) -> np.random.Generator:
    """The random generator of one (seed, rank, step): independent streams, the same bytes on every machine."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, rank, step])))


class OnlineSampler:
    """Base of online samplers: ``sample_batch(batch_size, rng) -> dict`` of tensors, from ``self.params``.

    Args:
        params: the sampler's parameters (curricula change them by step, e.g. ``n_points`` or ``n_dims``).
    """

    def __init__(self, **params):
        self.params = dict(params)

    def sample_batch(self, batch_size: int, rng: np.random.Generator) -> dict:
        raise NotImplementedError

    def check_curricula(self, curricula) -> None:
        """Draw one example at the curricula's first and last values, so a bad end value fails before training.

        Raises:
            ValueError: naming the curricula and the sampler's own message.
        """
        if not curricula:
            return

        def last_step(c: StepCurriculum) -> int:
            return c.every * math.ceil((c.end - c.start) / c.increment)

        for label, step_of in (("start", lambda c: 0), ("end", last_step)):
            probe = copy.copy(self)
            probe.params = dict(self.params)
            for curriculum in curricula:
                curriculum.apply(step_of(curriculum), probe.params)
            try:
                probe.sample_batch(1, np.random.default_rng(0))
            except (ValueError, TypeError, IndexError, RuntimeError) as err:
                texts = " ".join(c.to_text() for c in curricula)
                values = {c.field: probe.params[c.field] for c in curricula}
                raise ValueError(
                    f"argument --curriculum: {texts} reaches {values} at its {label}, which the sampler rejects: {err}"
                ) from None


class OnlineBatches(IterableDataset):
    """Iterates the batches of steps ``start_step, start_step + 1, ...`` of one process.

    Args:
        sampler: an :class:`OnlineSampler`.
        batch_size: examples per batch (per process).
        seed: the run's data seed.
        rank: the process index (each process draws its own examples).
        curricula: :class:`StepCurriculum` objects applied to ``sampler.params`` before each step's batch.
        start_step: the first step to draw (a resumed run's step).
    """

    def __init__(self, sampler: OnlineSampler, batch_size: int, seed: int, rank: int = 0, curricula=(), start_step=0):
        self.sampler, self.batch_size, self.seed, self.rank = sampler, batch_size, seed, rank
        self.curricula, self.start_step = tuple(curricula), start_step

    def __iter__(self) -> Iterator[dict]:
        step = self.start_step
        while True:
            for curriculum in self.curricula:
                curriculum.apply(step, self.sampler.params)
            yield self.sampler.sample_batch(self.batch_size, step_rng(self.seed, self.rank, step))
            step += 1


@dataclasses.dataclass
class StepCurriculum:
    """``params[field] = min(end, start + increment · ⌊step / every⌋)`` (Garg et al. / P5: +1 dim every 2000 steps).

    Args:
        field: the sampler parameter it sets.
        start: the value at step 0.
        end: the final value.
        increment: the change per stage (negative for a decreasing curriculum).
        every: steps per stage.
    """

    field: str
    start: int | float
    end: int | float
    increment: int | float
    every: int

    def __post_init__(self):
        if self.every < 1:
            raise ValueError(f"curriculum {self.field}: every={self.every} must be ≥ 1")
        if self.increment == 0 or (self.end - self.start) * self.increment < 0:
            raise ValueError(
                f"curriculum {self.field}: increment={self.increment} must move start={self.start} "
                f"toward end={self.end}"
            )

    def value_at(self, step: int):
        value = self.start + self.increment * (step // self.every)
        return min(value, self.end) if self.increment > 0 else max(value, self.end)

    def apply(self, step: int, params: dict) -> bool:
        """Set the parameter for ``step``; returns whether it changed."""
        value = self.value_at(step)
        changed = params.get(self.field) != value
        params[self.field] = value
        return changed

    @classmethod
    def parse(cls, text: str) -> StepCurriculum:
        """``"n_points=11:41:2:2000"`` -> ``StepCurriculum("n_points", 11, 41, 2, 2000)``."""
        field, _, spec = text.partition("=")
        parts = spec.split(":")
        try:
            if not field or len(parts) != 4 or not parts[3].strip().isdigit():
                raise ValueError
            numbers = [float(p) if any(c in p for c in ".eE") else int(p) for p in parts[:3]]
            if not all(math.isfinite(n) for n in numbers):
                raise ValueError
        except ValueError:
            raise ValueError(
                f"--curriculum {text!r} must look like FIELD=START:END:INCREMENT:EVERY (numbers; EVERY an integer), "
                "e.g. n_dims=5:20:1:2000"
            ) from None
        return cls(field, *numbers, int(parts[3]))

    def to_text(self) -> str:
        return f"{self.field}={self.start}:{self.end}:{self.increment}:{self.every}"
