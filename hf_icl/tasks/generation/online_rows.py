"""Online training rows of a generation task (`--task-option online=true`): fresh rows every step, so `--curriculum`
can grow a builder field (P4's copy: `--curriculum train_max_length=5:20:1:500`).

Every step's rows are drawn by the task's own training-row sampler (:attr:`.generative.GenerationTask.train_row`,
the one behind the builder's fixed training split) from the step's generator (:func:`~hf_icl.tasks.online.step_rng`:
the run's data seed, the process and the step), with the builder config's fields set to the sampler's parameters at
that step; they are tokenized as the fixed split is. A resumed run draws the rows an uninterrupted one would.

The builder config (its validation and test splits, and what the evaluation calls the training range) keeps the
run's values, so a curriculum must end at the config's value of the field it grows: the validation split and the
in-range metrics then describe what the model finally trained on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from ..online import OnlineSampler, StepCurriculum


class OnlineRowSampler(OnlineSampler):
    """Batches of `train_row` rows, tokenized and right-padded.

    Args:
        config: the task's builder config; its fields named in `fields` are the sampler's parameters (what a
            curriculum may change).
        train_row: ``(config, numpy generator) -> row``.
        encode: ``row -> (input_ids, labels)`` lists (labels ``-100`` where there is no loss).
        collate: list of ``{"input_ids", "labels"}`` -> the batch dict (right padding).
        validate: ``config -> None``, raising ``ValueError`` naming the field, for a config the builder refuses.
        fields: the config fields a curriculum may set.
    """

    def __init__(self, config, train_row: Callable, encode: Callable, collate: Callable, validate: Callable, fields):
        super().__init__(**{name: getattr(config, name) for name in fields})
        self.config, self.train_row, self.encode, self.collate, self.validate = (
            config, train_row, encode, collate, validate)  # fmt: skip
        self._checked: tuple | None = None

    def step_config(self):
        """The builder config with this step's parameters (checked once per distinct set of values)."""
        config = dataclasses.replace(self.config, **self.params)
        values = tuple(sorted(self.params.items()))
        if values != self._checked:
            self.validate(config)
            self._checked = values
        return config

    def sample_batch(self, batch_size: int, rng: np.random.Generator) -> dict:
        config = self.step_config()
        examples = []
        for _ in range(batch_size):
            input_ids, labels = self.encode(self.train_row(config, rng))
            examples.append({"input_ids": input_ids, "labels": labels})
        return self.collate(examples)  # input_ids, labels: (B, T)

    def check_curricula(self, curricula: tuple[StepCurriculum, ...]) -> None:
        """Each curriculum ends at the config's value of its field (what validation and the in-range metrics use),
        and the sampler accepts its first and last values.

        Raises:
            ValueError: naming the curriculum, the field and the value it must end at.
        """
        for curriculum in curricula:
            final = getattr(self.config, curriculum.field)
            if curriculum.end != final:
                raise ValueError(
                    f"argument --curriculum: {curriculum.to_text()} ends at {curriculum.end}, but the task's "
                    f"{curriculum.field} is {final} (its validation split and in-range metrics use it); end the "
                    f"curriculum at {final} or set --task-option {curriculum.field}={curriculum.end}"
                )
        super().check_curricula(curricula)
