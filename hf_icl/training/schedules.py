"""Learning-rate schedules of `train.py`: the three of its own and every step-based one of `transformers`.

`--lr-schedule cosine|constant|wsd` are hf_icl's: a linear warm-up from `--warmup-start-lr`, then cosine to
`--min-lr`, constant, or warm-up/stable/decay, each able to follow a `--max-train-minutes` budget. Any other name
is a `transformers.get_scheduler` schedule (`linear`, `cosine_with_restarts`, `polynomial`, `constant_with_warmup`,
`warmup_stable_decay`, ...), built with the run's warm-up length and step count and read as a multiplier by step
(its warm-up starts at 0; `--min-lr` and `--decay-ratio` reach the schedules that take a final rate or a decay
length). A resumed run whose length changed follows its new schedule, never above the rate it had reached
(:func:`extension_cap`), so extending a run never warms it up again.
"""

from __future__ import annotations

import math
from dataclasses import fields, replace

import torch
from transformers import get_scheduler
from transformers.optimization import TYPE_TO_SCHEDULER_FUNCTION

OWN_SCHEDULES: tuple[str, ...] = ("cosine", "constant", "wsd")
_NEEDS_METRICS = ("reduce_lr_on_plateau", "greedy")  # they step on a validation metric, not on the step count
LIBRARY_SCHEDULES: tuple[str, ...] = tuple(
    kind.value for kind in TYPE_TO_SCHEDULER_FUNCTION if kind.value not in OWN_SCHEDULES + _NEEDS_METRICS
)
"""`transformers.get_scheduler` names `--lr-schedule` accepts besides :data:`OWN_SCHEDULES` (`cosine` and
`constant` stay hf_icl's own: a warm-up from `--warmup-start-lr`, a cosine to `--min-lr`)."""
LR_SCHEDULES: tuple[str, ...] = OWN_SCHEDULES + LIBRARY_SCHEDULES


def warmup_steps(args, total_steps: int) -> int:
    """The warm-up length: `--warmup-steps` when given, else `--warmup-ratio` of the run."""
    return args.warmup_steps if args.warmup_steps is not None else int(args.warmup_ratio * total_steps)


class TrainingClock:
    """Training wall time against `--max-train-minutes`.

    Args:
        budget_minutes: the budget, or `None` (then `fraction` stays 0 and the run is limited by steps only).
    """

    def __init__(self, budget_minutes: float | None):
        self.budget_s = 60.0 * budget_minutes if budget_minutes else None
        self.fraction = 0.0  # share of the budget used so far

    def update(self, elapsed_s: float) -> None:
        if self.budget_s:
            self.fraction = elapsed_s / self.budget_s

    @property
    def expired(self) -> bool:
        return self.fraction >= 1.0


def lr_multiplier(args, total_steps: int, clock: TrainingClock | None = None, cap: dict | None = None):
    """LR multiplier by step: linear warm-up from `warmup_start_lr` to `lr`, then `args.lr_schedule`.

    `cosine` decays to `min_lr` over the remaining steps (P1 App. B); `constant` stays at `lr`; `wsd`
    (warm-up, stable, decay) stays at `lr` and decays linearly to `min_lr` over the last `decay_ratio` of the steps,
    so the rate is high until the model has left RegBench's pre-induction plateau. With a time budget (`clock`),
    progress after the warm-up is the larger of the step fraction and the time fraction, so the decay starts at
    (1 − `decay_ratio`) of the budget when the budget ends first. Other names are `transformers` schedules
    (:func:`library_multiplier`).

    Args:
        args: the run arguments.
        total_steps: the run's length in optimiser steps.
        clock: the `--max-train-minutes` budget, if any.
        cap: a mapping read at every step (filled after a resume): from step `cap["from_step"]` on, the multiplier
            is at most `cap["multiplier"]` (:func:`extension_cap`); empty or `None`: no cap.
    """
    factor = own_multiplier(args, total_steps, clock)
    if args.lr_schedule in LIBRARY_SCHEDULES:
        factor = library_multiplier(args, total_steps)
    if cap is None:
        return factor

    def capped(step: int) -> float:
        if cap and step >= cap["from_step"]:
            return min(factor(step), cap["multiplier"])
        return factor(step)

    return capped


def own_multiplier(args, total_steps: int, clock: TrainingClock | None = None):
    """The multiplier of hf_icl's own schedules (:data:`OWN_SCHEDULES`; see :func:`lr_multiplier`)."""
    warmup = warmup_steps(args, total_steps)
    decay_start = max(warmup, total_steps - int(args.decay_ratio * total_steps))

    def factor(step: int) -> float:
        if step < warmup:
            return (args.warmup_start_lr + (args.lr - args.warmup_start_lr) * step / warmup) / args.lr
        if args.lr_schedule == "constant":
            return 1.0
        by_time = clock.fraction if clock is not None else 0.0
        if args.lr_schedule == "wsd":
            progress = (step - decay_start) / max(1, total_steps - decay_start)
            if args.decay_ratio > 0:
                progress = max(progress, (by_time - 1 + args.decay_ratio) / args.decay_ratio)
            progress = min(max(progress, 0.0), 1.0)
            return (args.lr + (args.min_lr - args.lr) * progress) / args.lr
        progress = min(max((step - warmup) / max(1, total_steps - warmup), by_time), 1.0)
        return (args.min_lr + (args.lr - args.min_lr) * 0.5 * (1 + math.cos(math.pi * progress))) / args.lr

    return factor


def library_multiplier(args, total_steps: int):
    """The multiplier by step of the `transformers` schedule `args.lr_schedule` (one of :data:`LIBRARY_SCHEDULES`),
    with the run's warm-up length and steps; `min_lr` reaches the schedules that take a final rate
    (`cosine_with_min_lr`, `cosine_warmup_with_min_lr`, `polynomial`'s `lr_end`, `warmup_stable_decay`'s
    `min_lr_ratio`) and `decay_ratio` `warmup_stable_decay`'s decay length."""
    specific = {
        "cosine_with_min_lr": {"min_lr": args.min_lr},
        "cosine_warmup_with_min_lr": {"min_lr": args.min_lr},
        "polynomial": {"lr_end": args.min_lr} if args.min_lr < args.lr else {},
        "warmup_stable_decay": {"num_decay_steps": int(args.decay_ratio * total_steps),
                                "min_lr_ratio": args.min_lr / args.lr},
    }.get(args.lr_schedule)  # fmt: skip
    probe = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=args.lr)  # the schedules read its lr
    scheduler = get_scheduler(args.lr_schedule, probe, warmup_steps(args, total_steps), total_steps, specific)
    return scheduler.lr_lambdas[0]


def extension_cap(args, changes: dict, step: int, total_steps: int, steps_per_epoch: int, cap: dict | None) -> dict:
    """The cap of a resumed run whose length changed (`--resume --allow-changed-settings --max-steps N`).

    The schedule is recomputed for the new length, but from the resumed step on it never rises above the multiplier
    the saved run had reached there: a finished, decayed run continues at its final rate instead of going back to
    the peak, and an interrupted one continues unchanged until its new schedule falls below that rate. A run resumed
    during its warm-up keeps warming up (no cap).

    Args:
        args: the new run arguments.
        changes: field -> `(saved, new)` of the changed settings.
        step: the resumed step.
        total_steps: the new length.
        steps_per_epoch: optimiser steps per epoch (a length given in epochs).
        cap: the cap the saved run already had (an earlier extension), or `None`.

    Returns:
        `{"from_step", "multiplier", "total_steps", "saved_total_steps"}`, or `{}` where the length did not change.
    """
    known = {f.name for f in fields(args)}
    saved = replace(args, **{name: old for name, (old, _) in changes.items() if name in known})
    saved_total = saved.max_steps or math.ceil(saved.epochs * steps_per_epoch)
    if saved_total == total_steps or step < warmup_steps(saved, saved_total):
        return dict(cap or {})
    reached = lr_multiplier(saved, saved_total, cap=dict(cap or {}))(step)
    return {"from_step": step, "multiplier": reached, "total_steps": total_steps, "saved_total_steps": saved_total}
