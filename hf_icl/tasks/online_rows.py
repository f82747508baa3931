"""Online training rows of a builder task (`--task-option online=true`): fresh rows every step, so `--curriculum`
can grow a builder field (P4's copy: `--curriculum train_max_length=5:20:1:500`; P2's languages:
`--curriculum train_max_length=4:12:2:500`).

Every step's rows are drawn by the task's own training-row sampler (the one behind the builder's fixed training
split: :attr:`.generation.generative.GenerationTask.train_row`, :func:`.formal_language.regular_languages.train_rows`)
from the step's generator (:func:`~hf_icl.tasks.online.step_rng`: the run's data seed, the process and the step),
with the builder config's fields set to the sampler's parameters at that step; they are tokenized as the fixed split
is. A resumed run draws the rows an uninterrupted one would. A family offers this with :func:`online_option` among
its training options and :func:`online_task_data` in its ``prepare_data``.

The builder config (its validation and test splits, and what the evaluation calls the training range) keeps the
run's values, so a curriculum must end at the config's value of the field it grows: the validation split and the
in-range metrics then describe what the model finally trained on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from .family import TaskData, TaskOption
from .lm_data import pad_collate, token_fields
from .online import OnlineSampler, StepCurriculum


class OnlineRowSampler(OnlineSampler):
    """Batches of `train_rows` rows, tokenized by the fixed split's batched encoder and right-padded.

    Args:
        config: the task's builder config; its fields named in `fields` are the sampler's parameters (what a
            curriculum may change).
        train_rows: ``(config, numpy generator, n) -> {column: [n values]}``, n rows as the builder's training split
            draws them (:func:`one_row_at_a_time` makes it from a one-row sampler).
        encode: ``{column: [values]} -> {"input_ids": [...], "labels": [...]}`` (labels ``-100`` where there is no
            loss), the fixed split's encoder.
        collate: list of ``{"input_ids", "labels"}`` -> the batch dict (right padding).
        validate: ``config -> None``, raising ``ValueError`` naming the field, for a config the builder refuses.
        fields: the config fields a curriculum may set.
    """

    def __init__(self, config, train_rows: Callable, encode: Callable, collate: Callable, validate: Callable, fields):
        super().__init__(**{name: getattr(config, name) for name in fields})
        self.config, self.train_rows, self.encode, self.collate, self.validate = (
            config, train_rows, encode, collate, validate)  # fmt: skip
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
        encoded = self.encode(self.train_rows(self.step_config(), rng, batch_size))
        pairs = zip(encoded["input_ids"], encoded["labels"])
        examples = [{"input_ids": ids, "labels": labels} for ids, labels in pairs]
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


def online_option(tasks: tuple[str, ...]) -> TaskOption:
    """The ``online`` task option of a family whose `tasks` can draw their training rows online."""
    return TaskOption(
        "online",
        bool,
        False,
        "draw fresh training rows every step (from the run's data seed and the step) instead of the builder's fixed "
        f"n_train rows, so --curriculum can grow a field such as train_max_length; tasks: {', '.join(tasks)}.",
        samples_online=True,
        tasks=tasks,
    )


def one_row_at_a_time(train_row: Callable) -> Callable:
    """``train_rows`` for :class:`OnlineRowSampler` from ``train_row(config, rng) -> row``: n rows drawn in turn
    from the same generator, as columns."""

    def train_rows(config, rng: np.random.Generator, n: int) -> dict[str, list]:
        rows = [train_row(config, rng) for _ in range(n)]
        return {key: [row[key] for row in rows] for key in rows[0]}

    return train_rows


def online_task_data(builder, splits, tokenizer, encode: Callable, train_rows: Callable, option_fields, description):
    """The :class:`~hf_icl.tasks.family.TaskData` of an online run: an :class:`OnlineRowSampler` in place of the
    fixed training split (`splits` keeps validation and test for evaluation).

    Args:
        builder: the prepared ``datasets`` builder (its config, and ``validate_config`` to check each step's values).
        splits: its splits.
        tokenizer: the task tokenizer.
        encode: the batched encoder of the fixed split, ``{column: [values]} -> {"input_ids": [...], "labels": [...]}``.
        train_rows: ``(config, numpy generator, n) -> {column: [n values]}``, the builder's own training-row sampler.
        option_fields: the task's option fields; all but ``n_train`` and ``seed`` are what a curriculum may set.
        description: run-config facts about the data; ``n_train`` becomes ``None`` and ``online`` true.
    """
    fields = [name for name in option_fields if name not in ("n_train", "seed")]
    collate = pad_collate(tokenizer.pad_token_id)
    sampler = OnlineRowSampler(builder.config, train_rows, encode, collate, type(builder).validate_config, fields)
    description = {**description, "n_train": None, "online": True}
    return TaskData(sampler, None, token_fields(tokenizer), tokenizer, splits, builder.config, description)
