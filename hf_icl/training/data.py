"""Batch streams for the training loop: epochs over a finite dataset, or online batches drawn per step.

Both are iterated from a global optimiser step, so a resumed run sees exactly the batches an uninterrupted run
would: finite data through an epoch order fixed by (seed, epoch), online data through batches drawn from
(seed, rank, step). Neither draws from the global random generators, which dropout uses and a checkpoint saves: a
`DataLoader` without a `generator=` draws its iterator's base seed from the global torch generator, so a resumed
run, which opens its iterator mid-epoch, would see other dropout masks than an uninterrupted one.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator

import torch
from torch.utils.data import DataLoader, Dataset, Sampler
from transformers.trainer_pt_utils import get_length_grouped_indices

from ..tasks.family import TaskData
from ..tasks.online import OnlineBatches, step_rng


class LengthGroupedEpochSampler(Sampler):
    """Batches of similar length (less padding), in an order fixed by `seed` and the epoch alone.

    Uses `transformers`' `get_length_grouped_indices` (random mega-batches sorted by length), then shuffles the
    order of the batches. Because the order depends only on (seed, epoch), a resumed run sees exactly the batches
    an uninterrupted run would.

    Args:
        lengths: length of every example.
        batch_size: examples per batch (per process).
        seed: data-order seed.
    """

    def __init__(self, lengths: list[int], batch_size: int, seed: int):
        self.lengths, self.batch_size, self.seed, self.epoch = list(lengths), batch_size, seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.lengths)

    def __iter__(self):
        generator = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
        indices = get_length_grouped_indices(self.lengths, self.batch_size, generator=generator)
        batches = [indices[i : i + self.batch_size] for i in range(0, len(indices), self.batch_size)]
        order = torch.randperm(len(batches), generator=generator).tolist()
        return iter([index for b in order for index in batches[b]])


class EpochShuffleSampler(Sampler):
    """A random permutation per epoch, fixed by (seed, epoch) alone (finite data without lengths)."""

    def __init__(self, size: int, seed: int):
        self.size, self.seed, self.epoch = size, seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.size

    def __iter__(self):
        return iter(
            torch.randperm(
                self.size, generator=torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
            ).tolist()
        )


class EpochTagged(Sampler):
    """Yields `(index, epoch)` for every index of `sampler` (which must have `set_epoch`), for :class:`Augmented`."""

    def __init__(self, sampler):
        self.sampler, self.epoch = sampler, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch
        self.sampler.set_epoch(epoch)

    def __len__(self) -> int:
        return len(self.sampler)

    def __iter__(self):
        return ((index, self.epoch) for index in self.sampler)


class Augmented(Dataset):
    """Example `index` of epoch `epoch` passed through `augment` with a generator seeded by (seed, epoch, index).

    So every epoch sees a fresh draw of the task's symmetries, and a resumed run sees exactly the examples an
    uninterrupted run would.

    Args:
        dataset: the map-style training set.
        augment: `(example, torch.Generator) -> example`.
        seed: data seed.
    """

    def __init__(self, dataset, augment, seed: int):
        self.dataset, self.augment, self.seed = dataset, augment, seed

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, key: tuple[int, int]):
        index, epoch = key
        generator = torch.Generator().manual_seed(((self.seed * 1_000_003 + epoch) * 1_000_003 + index) % 2**63)
        return self.augment(self.dataset[index], generator)


class EpochBatches:
    """Epochs over a finite dataset, split across processes by Accelerate.

    Args:
        accelerator: the run's `Accelerator`.
        data: the prepared task (`data.train` a map-style dataset, `data.collate` its collate function).
        batch_size: examples per batch per process.
        seed: data-order seed.
        grouped: length-grouped batches where the data has lengths (else a plain permutation per epoch).
    """

    def __init__(self, accelerator, data: TaskData, batch_size: int, seed: int, grouped: bool = True):
        if data.lengths is not None and grouped:
            sampler = LengthGroupedEpochSampler(data.lengths, batch_size, seed)
        else:
            sampler = EpochShuffleSampler(len(data.train), seed)
        dataset = data.train
        if data.augment is not None:
            sampler, dataset = EpochTagged(sampler), Augmented(data.train, data.augment, seed)
        # The loader's own generator, re-seeded from (seed, epoch) at every epoch (`iter_from`): its iterator's base
        # seed (and its workers' seeds) then come from neither the global generator nor the resume point.
        self.generator, self.seed = torch.Generator(), seed
        loader = DataLoader(
            dataset, batch_size=batch_size, sampler=sampler, collate_fn=data.collate, generator=self.generator
        )
        self.accelerator, self.loader, self.data = accelerator, accelerator.prepare(loader), data
        self.steps_per_epoch = math.ceil(len(data.train) / (batch_size * accelerator.num_processes))

    def probe_batches(self, total_steps: int) -> Iterator[tuple[int, dict]]:
        """`(0, batch)` of the longest training example alone, on the CPU (the run's setup checks)."""
        lengths = self.data.lengths
        longest = max(range(len(lengths)), key=lengths.__getitem__) if lengths else 0
        yield 0, self.data.collate([self.data.train[longest]])

    def iter_from(self, step: int) -> Iterator[dict]:
        """Batches of global steps `step`, `step + 1`, ... (epoch after epoch)."""
        epoch, skip = divmod(step, self.steps_per_epoch)
        while True:
            self.loader.set_epoch(epoch)
            self.generator.manual_seed((self.seed * 1_000_003 + epoch) % 2**63 + 1)
            yield from self.accelerator.skip_first_batches(self.loader, skip) if skip else self.loader
            epoch, skip = epoch + 1, 0


class OnlineStream:
    """Online batches of this process, drawn from (seed, rank, step), moved to the run's device.

    Args:
        accelerator: the run's `Accelerator` (gives the rank and device).
        data: the prepared task (`data.train` an `OnlineSampler`).
        batch_size: examples per batch per process.
        seed: data seed.
        curricula: `StepCurriculum` objects changing the sampler's parameters by step.
    """

    steps_per_epoch = None

    def __init__(self, accelerator, data: TaskData, batch_size: int, seed: int, curricula=()):
        self.accelerator, self.sampler = accelerator, data.train
        self.batch_size, self.seed, self.curricula = batch_size, seed, tuple(curricula)
        self.sampler.check_curricula(self.curricula)  # a bad end value fails now, not mid-run

    def probe_batches(self, total_steps: int) -> Iterator[tuple[int, dict]]:
        """`(step, batch)` of one example at the first and the last step (curricula applied), on the CPU, drawn
        from a copy of the sampler (the run's setup checks)."""
        for step in sorted({0, total_steps - 1}):
            sampler = copy.copy(self.sampler)
            sampler.params = dict(self.sampler.params)
            for curriculum in self.curricula:
                curriculum.apply(step, sampler.params)
            yield step, sampler.sample_batch(1, step_rng(self.seed, 0, step))

    def iter_from(self, step: int) -> Iterator[dict]:
        batches = OnlineBatches(
            self.sampler, self.batch_size, self.seed, self.accelerator.process_index, self.curricula, step
        )
        device = self.accelerator.device
        for batch in batches:
            yield {key: value.to(device) if torch.is_tensor(value) else value for key, value in batch.items()}


def batch_stream(accelerator, data: TaskData, batch_size: int, seed: int, curricula=(), grouped: bool = True):
    """`OnlineStream` for an online sampler, `EpochBatches` for a finite dataset."""
    if data.online:
        return OnlineStream(accelerator, data, batch_size, seed, curricula)
    if curricula:
        raise ValueError("curricula change an online sampler's parameters; this task's data is a finite dataset")
    return EpochBatches(accelerator, data, batch_size, seed, grouped)
