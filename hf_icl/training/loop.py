"""The Accelerate training loop for any task family: AdamW + warm-up/cosine in steps (paper 1, App. B), the family's
objective plus weighted auxiliary losses, finite epochs or online batches with curricula, atomic checkpoints and
exact resume.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from accelerate import Accelerator
from accelerate.utils import DistributedType, set_seed
from tqdm.auto import tqdm

from ..architectures import config_for
from ..architectures.heads import build_model
from ..block_features.feature_registry import features_label
from ..evaluation.split_probe import probe_evaluation_splits
from ..evaluation.tables import markdown_table
from ..modeling.states import state_size_report
from ..tasks import EvalRequest, TaskData, TaskFamily, family_of
from ..utils.validation import check_output_folder, naming, one_line
from .arguments import RunArguments, feature_flags
from .checkpoints import (
    ResumeError,
    checkpoint_dir,
    checkpoints_that_fit,
    clean_leftovers,
    clear_run_folder,
    load_checkpoint,
    load_trainer_state,
    prepare_output_dir,
    read_run_marker,
    save_checkpoint,
    write_folder_atomic,
    write_run_marker,
)
from .data import batch_stream
from .launch import single_process_launch_warning
from .progress import STOPPED_BY_REQUEST, append_validation, clear_stop, stop_requested
from .provenance import code_provenance, code_segments, machine_facts
from .run_files import write_reports
from .schedules import TrainingClock, extension_cap, lr_multiplier, warmup_steps  # noqa: F401 (re-exported)

TRACKER_PACKAGES = {"trackio": ("trackio", "trackio"), "wandb": ("wandb", '"hf-icl[tracking]"')}
"""`--report-to` values whose package is optional: tracker -> (module, what to pip install)."""
KILL_AT_STEP_ENV = "HF_ICL_TEST_KILL_AT_STEP"  # test hook: hard-exit after this step, as a SIGKILL would
KILL_AT_EXPORT_ENV = "HF_ICL_TEST_KILL_IN_EXPORT"  # test hook: hard-exit once the model's weights are half exported


def build_optimizer(model, args: RunArguments) -> torch.optim.Optimizer:
    """AdamW; with `weight_decay_on="matrices"` biases, norms and embeddings are not decayed, with `"all"` they are."""
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        matrix = param.ndim >= 2 and "embed" not in name
        (decay if matrix or args.weight_decay_on == "all" else no_decay).append(param)
    groups = [{"params": decay, "weight_decay": args.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=args.lr, betas=(args.adam_beta1, args.adam_beta2))


def weights_checksum(model) -> float:
    return float(sum(p.detach().double().sum() + p.detach().double().abs().sum() for p in model.parameters()))


def preflight(args: RunArguments) -> list[Path]:
    """Checks that need no training: the run folder (with `--resume`: the saved run's settings and its checkpoints),
    the network (with `--push-to-hub`). Returns the checkpoints to try when resuming, newest first."""
    output_dir = args.resolved_output_dir()
    check_output_folder(output_dir, "--output-dir")
    resume_from, warnings = prepare_output_dir(output_dir, args.resume, args.overwrite, args.to_dict())
    if os.environ.get("RANK", "0") == "0":
        for warning in warnings:
            print(warning, file=sys.stderr)
    if resume_from and args.max_steps:
        step = load_trainer_state(resume_from[0])["global_step"]
        if step > args.max_steps:
            raise ValueError(
                f"argument --max-steps: max_steps={args.max_steps} is below step {step} of {resume_from[0]}; "
                f"expected an integer >= {step}"
            )
    if args.push_to_hub:
        from ..hub import check_hub_reachable

        check_hub_reachable()
    if args.report_to in TRACKER_PACKAGES:
        import importlib.util

        package, install = TRACKER_PACKAGES[args.report_to]
        if importlib.util.find_spec(package) is None:
            raise ValueError(f"report_to={args.report_to!r} needs the {package} package (pip install {install})")
    return resume_from


@dataclass
class Run:
    """What the steps of `train` share."""

    args: RunArguments
    accelerator: Accelerator
    output_dir: Path
    family: TaskFamily
    data: TaskData | None = None
    code: dict = field(default_factory=dict)  # which code this process imported (`code_provenance`)
    machine: dict = field(default_factory=dict)  # the host this process runs on (`machine_facts`)


def start_run(args: RunArguments) -> Run:
    """Accelerator, seeds and CPU threads; the run folder is not touched (see :func:`claim_run_folder`)."""
    output_dir = args.resolved_output_dir()
    accelerator = Accelerator(
        cpu=not torch.cuda.is_available(),
        mixed_precision=args.mixed_precision,
        # The schedule is defined in optimiser steps; linked to the optimiser, Accelerate would advance it once per
        # process at every step (N times too fast under N-process DDP).
        step_scheduler_with_optimizer=False,
        log_with=None if args.report_to == "none" else args.report_to,
        project_dir=str(output_dir),
    )
    launch_warning = single_process_launch_warning(accelerator.num_processes)
    if launch_warning:
        accelerator.print(launch_warning)
    set_seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)
    elif accelerator.num_processes == 1 and accelerator.device.type == "cpu":
        # `accelerate launch` pins a lone CPU process to OMP_NUM_THREADS=1; a single process should use the cores.
        torch.set_num_threads(len(os.sched_getaffinity(0)))
    return Run(args, accelerator, output_dir, family_of(args.task), code=code_provenance(),  # imported now
               machine=machine_facts())  # fmt: skip


def claim_run_folder(run: Run) -> None:
    """Once every check has passed: finish what a killed run left (`.tmp-*`), clear the old run with
    `--overwrite`, and write the marker of a new run. Until here a run that fails leaves the folder as it was."""
    args, output_dir = run.args, run.output_dir
    if run.accelerator.is_main_process:
        for folder in (output_dir, checkpoint_dir(output_dir)):
            cleaned = clean_leftovers(folder)
            if cleaned:
                print(f"cleaned what an interrupted run left in {folder}: {', '.join(cleaned)}", file=sys.stderr)
        if args.overwrite:  # only what a run wrote; preflight refused a folder that is not a run
            kept = clear_run_folder(output_dir)
            if kept:
                print(f"--overwrite kept {len(kept)} entries that are not run outputs: {', '.join(kept)}")
        if not (args.resume and read_run_marker(output_dir) is not None):
            write_run_marker(output_dir, args.to_dict())
    run.accelerator.wait_for_everyone()


def prepare_data(run: Run) -> TaskData:
    """The family's data, prepared once (main process first, so the others read the `datasets` cache)."""
    with run.accelerator.main_process_first():
        return run.family.prepare_data(run.args.task_request())


class RunSetupError(ValueError):
    """Bad input that only shows once the data or the model exists (a curriculum's end value, an unknown auxiliary
    loss name); raised before the first optimiser step, reported like any argument error."""


def build_task_model(run: Run):
    """The architecture at its preset, with the fields the data fixes, under the family's head.

    Raises:
        RunSetupError: an override contradicts the data (a vocabulary smaller than the task's), or the head refuses
            the config (a block feature that needs token ids, on continuous inputs).
    """
    args = run.args
    check_data_fields(run.data.model_fields, args.overrides, args.task)
    try:
        with naming("--override", feature_flags()):
            config = config_for(args.architecture, args.preset, **{**run.data.model_fields, **args.overrides})
            return build_model(run.family.head, config)
    except ValueError as err:
        raise RunSetupError(str(err)) from None


def check_data_fields(fixed: dict, overrides: dict, task: str) -> None:
    """Refuse an override of a config field the task's data fixes: `vocab_size` may only grow (spare ids), every
    other such field (`input_dim`, `pad_token_id`, ...) must equal the data's."""
    for name, value in overrides.items():
        if name not in fixed or value == fixed[name]:
            continue
        if name == "vocab_size" and isinstance(value, int) and value >= fixed[name]:
            continue
        allowed = f"an integer >= {fixed[name]}" if name == "vocab_size" else f"{fixed[name]!r} or no override"
        raise RunSetupError(
            f"argument --override: {name}={value!r} is not allowed: the data of task {task!r} fixes {name}="
            f"{fixed[name]!r}; expected {allowed}"
        )


@contextlib.contextmanager
def preserved_random_state():
    """Run a block without moving any random generator (torch on every device, numpy, Python's `random`)."""
    import random

    import numpy as np

    python_state, numpy_state = random.getstate(), np.random.get_state()
    with torch.random.fork_rng(devices=range(torch.cuda.device_count())):
        try:
            yield
        finally:
            random.setstate(python_state)
            np.random.set_state(numpy_state)


def probe_model(run: Run, model, stream, total_steps: int) -> None:
    """Forward the longest training example (online tasks: an example of the first and of the last step, curricula
    applied) before the run folder is touched, so data the model cannot take fails now, in one line: positions past
    its limit, a curriculum that outgrows it, an auxiliary-loss weight of a loss the model does not report.

    Raises:
        RunSetupError: naming `--curriculum` (only the last step fails), else `--override` or `--preset`.
    """
    device = next(model.parameters()).device
    with preserved_random_state(), torch.no_grad():
        for step, batch in stream.probe_batches(total_steps):
            batch = {key: value.to(device) if torch.is_tensor(value) else value for key, value in batch.items()}
            try:
                total_loss(run, model, batch)
            except RunSetupError:
                raise
            except ValueError as err:
                grown = step > 0 and run.args.curriculum
                flag = "--curriculum" if grown else "--override" if run.args.overrides else "--preset"
                where = f"at step {step + 1} (curricula applied)" if step > 0 else ""
                raise RunSetupError(
                    f"argument {flag}: the {run.args.architecture} model ({run.args.preset}"
                    f"{', ' + str(run.args.overrides) if run.args.overrides else ''}) cannot take the training data "
                    f"of task {run.args.task!r}{' ' + where if where else ''}: {one_line(err)}"
                ) from None


def probe_splits(run: Run, model) -> None:
    """Score the longest row of the validation and test splits with the untrained model (`evaluation.split_probe`), so
    an evaluation split past the model's positions fails now, not after training.

    Raises:
        RunSetupError: naming `--override` or `--preset`, the split and the model's message.
    """
    with preserved_random_state():
        problem = probe_evaluation_splits(run.args.task, run.family, run.data, model)
    if problem is not None:
        args = run.args
        raise RunSetupError(
            f"argument {'--override' if args.overrides else '--preset'}: the {args.architecture} model ({args.preset}"
            f"{', ' + str(args.overrides) if args.overrides else ''}) cannot take {problem}"
        )


def total_loss(run: Run, model, batch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The family's objective plus the weighted auxiliary losses; returns the total and each named term."""
    result = run.family.objective(model, batch)
    unknown = sorted(set(run.args.aux_loss_weights) - set(result.aux_losses))
    if unknown:  # names are only known once the model has reported its auxiliary losses
        raise RunSetupError(
            f"argument --aux-loss-weight: {', '.join(unknown)} is not an auxiliary loss of this model; it reports: "
            f"{', '.join(sorted(result.aux_losses)) or 'none'}"
        )
    terms = {"task": result.loss}
    loss = result.loss
    for name, value in result.aux_losses.items():
        terms[name] = value
        loss = loss + run.args.aux_loss_weights.get(name, 1.0) * value
    return loss, terms


def backward_in_micro_batches(run: Run, model, batch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Forward and backward of one optimiser step's batch in `gradient_accumulation_steps` micro-batches.

    The step's batch (so the data order, curricula and resume points) does not depend on the number of micro-batches:
    it is cut along its rows (the first dimension of its first tensor with ≥ 2 dimensions; tensors and lists of that
    length are cut, anything else is shared), each backward is weighted by its share of the rows, and processes
    synchronise gradients in the last backward only. Returns the loss and its terms over the whole batch.
    """
    accelerator, parts = run.accelerator, run.args.gradient_accumulation_steps
    if parts == 1:
        loss, terms = total_loss(run, model, batch)
        accelerator.backward(loss)
        return loss, terms
    rows = next(len(v) for v in batch.values() if torch.is_tensor(v) and v.ndim >= 2)
    slices = [(int(c[0]), int(c[-1]) + 1) for c in torch.arange(rows).tensor_split(min(parts, rows))]
    cut = {k for k, v in batch.items() if (torch.is_tensor(v) and v.ndim or isinstance(v, list)) and len(v) == rows}
    loss, terms = torch.zeros((), device=accelerator.device), {}
    for i, (start, stop) in enumerate(slices):
        part = {k: v[start:stop] if k in cut else v for k, v in batch.items()}
        share = (stop - start) / rows
        with contextlib.nullcontext() if i == len(slices) - 1 else accelerator.no_sync(model):
            part_loss, part_terms = total_loss(run, model, part)
            accelerator.backward(part_loss * share)
        loss = loss + part_loss.detach() * share
        for name, value in part_terms.items():
            terms[name] = terms.get(name, 0.0) + value.detach() * share
    return loss, terms


def train(args: RunArguments, resume_from: list[Path] | Path | None = None, changes: dict | None = None) -> dict:
    """Train, evaluate, and write the run folder. Returns the metrics written to `metrics.json`.

    Every check that needs the data or the model (:func:`build_task_model`, :func:`probe_model`) runs before the run
    folder is touched (:func:`claim_run_folder`).

    Args:
        args: validated run arguments.
        resume_from: checkpoints to resume from, newest first (`preflight`'s answer): the first that loads wins.
        changes: with `--resume --allow-changed-settings`, field -> `(saved, new)` (`ParsedRun.changes`): the new
            values take effect from the checkpoint's step on, and the marker and `metrics.json` record them.
    """
    run = start_run(args)
    run.data = prepare_data(run)
    accelerator = run.accelerator
    model = build_task_model(run)
    if resume_from:  # the saved weights against the model the settings build, before any training
        candidates = [resume_from] if isinstance(resume_from, Path) else list(resume_from)
        overrides = f", overrides {args.overrides}" if args.overrides else ""
        resume_from, warnings = checkpoints_that_fit(
            model, candidates, run.output_dir, f"{args.architecture}, preset {args.preset}{overrides}"
        )
        for warning in warnings:
            accelerator.print(warning)
    per_process_batch = max(1, args.batch_size // accelerator.num_processes)
    curricula = args.curricula()
    try:
        stream = batch_stream(
            accelerator, run.data, per_process_batch, args.data_order_seed(), curricula,
            grouped=args.batching == "grouped",
        )
    except ValueError as err:  # a curriculum value the sampler rejects: still before the first step
        raise RunSetupError(str(err)) from None
    total_steps = args.max_steps or math.ceil(args.epochs * stream.steps_per_epoch)
    if args.eval_every and accelerator.distributed_type == DistributedType.FSDP:
        raise RunSetupError(
            "argument --eval-every: the periodic validation scores a whole model on the main process, which FSDP "
            "shards; drop --eval-every under FSDP (the final evaluation still runs)"
        )
    probe_model(run, model, stream, total_steps)
    probe_splits(run, model)
    claim_run_folder(run)
    optimizer = build_optimizer(model, args)
    clock = TrainingClock(args.max_train_minutes)
    cap: dict = {}  # filled on a resume of a run that was extended (`extension_cap`)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_multiplier(args, total_steps, clock, cap))
    warmup = warmup_steps(args, total_steps)
    if warmup and warmup >= total_steps // 2:  # e.g. RegBench's default 200-step warm-up in a short run
        accelerator.print(
            f"warning: the warm-up ({warmup} steps) takes at least half of the run ({total_steps} steps), so the "
            f"learning rate stays below --lr={args.lr} for most of it; lower --warmup-steps for short runs"
        )
    model, optimizer, scheduler = accelerator.prepare(model, optimizer, scheduler)

    state = {"global_step": 0, "history": [], "wall_time_s": 0.0, "cpu_time_s": 0.0, "curriculum": {}}
    if resume_from:
        candidates = [resume_from] if isinstance(resume_from, Path) else list(resume_from)
        checkpoint, saved = load_checkpoint(accelerator, candidates)
        state = {**state, **saved}
        accelerator.print(f"resumed from {checkpoint} at step {state['global_step']}")
        if state["global_step"] > total_steps:
            raise ResumeError(
                f"argument --resume: {checkpoint} is at step {state['global_step']}, past the "
                f"{total_steps} steps of this run; raise --max-steps or --epochs"
            )
        cap.update(state.get("lr_schedule_cap") or {})
        if changes:
            extended = extension_cap(args, changes, state["global_step"], total_steps, stream.steps_per_epoch, cap)
            cap.clear(), cap.update(extended)
            if cap:
                state["lr_schedule_cap"] = dict(cap)  # saved with every later checkpoint, so a resume keeps it
            apply_changed_settings(run, optimizer, scheduler, changes, state["global_step"], dict(cap))
    state["code_segments"] = code_segments(state.get("code_segments"), state["global_step"], run.code)
    if accelerator.is_main_process:
        run.output_dir.mkdir(parents=True, exist_ok=True)
    if args.report_to != "none":
        flat = {k: v if isinstance(v, (int, float, str, bool)) else str(v) for k, v in args.to_dict().items()}
        # wandb writes its run folder (online or WANDB_MODE=offline) inside the run folder, named after it.
        init_kwargs = {"wandb": {"dir": str(run.output_dir), "name": run.output_dir.name}}
        accelerator.init_trackers("hf_icl", config=flat, init_kwargs=init_kwargs)

    run_steps(run, model, optimizer, scheduler, stream, state, total_steps, curricula, clock)
    total_steps = state["global_step"]  # fewer than planned when the time budget ended the run

    checksum = torch.tensor([weights_checksum(model)], dtype=torch.float64, device=accelerator.device)
    checksums = accelerator.gather(checksum).tolist()
    unwrapped = whole_model(run, model)
    metrics = None
    if accelerator.is_main_process:
        metrics = finish_run(run, unwrapped, state, total_steps, stream.steps_per_epoch, checksums)
    accelerator.wait_for_everyone()
    # Drop the DDP/FSDP wrapper while the process group is still registered, so that its C++ reducer only releases a
    # reference. Freed after `end_training`, the reducer would hold the last one and run the Gloo group's destructor
    # with the GIL held; that destructor joins worker threads that may still need the GIL to free the tensors of the
    # last collective, and the process hangs at exit (seen under load in CI). Destroyed from Python, the group's
    # destructor releases the GIL first.
    model = optimizer = scheduler = unwrapped = None
    accelerator.free_memory()
    accelerator.end_training()
    return metrics


def apply_changed_settings(run: Run, optimizer, scheduler, changes: dict, step: int, cap: dict | None = None) -> None:
    """After loading a checkpoint: make the new optimiser settings take effect (the saved optimiser and scheduler
    states carry the old learning rate, betas and weight decay), and record the change in the run's marker, with the
    schedule's cap where the run's length changed (`schedules.extension_cap`)."""
    args = run.args
    inner = getattr(scheduler, "scheduler", scheduler)
    inner.base_lrs = [args.lr] * len(optimizer.param_groups)
    for group, multiplier in zip(optimizer.param_groups, inner.lr_lambdas):
        group["initial_lr"], group["lr"] = args.lr, args.lr * multiplier(inner.last_epoch)
        group["betas"] = (args.adam_beta1, args.adam_beta2)
    optimizer.param_groups[0]["weight_decay"] = args.weight_decay  # the decayed group (`build_optimizer`)
    if run.accelerator.is_main_process:
        marker = read_run_marker(run.output_dir) or {}
        entry = {"step": step, "changes": {name: {"saved": old, "now": new} for name, (old, new) in changes.items()}}
        if cap:
            entry["lr_schedule"] = {**cap, "max_lr": args.lr * cap["multiplier"]}
        write_run_marker(run.output_dir, args.to_dict(), [*marker.get("setting_changes", []), entry])
    run.accelerator.print(
        f"continuing from step {step} with changed settings: "
        + "; ".join(f"{name} {old!r} -> {new!r}" for name, (old, new) in sorted(changes.items()))
    )
    if cap and cap["from_step"] == step:
        run.accelerator.print(
            f"learning-rate schedule recomputed for {cap['total_steps']} steps (was {cap['saved_total_steps']}); from "
            f"step {step} it stays at or below {args.lr * cap['multiplier']:.3g}, the rate the run had reached, so it "
            "does not warm up again (recorded in setting_changes of hf_icl_run.json and metrics.json)"
        )


def whole_model(run: Run, model):
    """The trained model as one module on the main process (`None` on the others under FSDP).

    Under FSDP each process holds shards and a forward needs every process, so the shards are gathered into a fresh
    unsharded copy for the evaluation and `save_pretrained`; otherwise this is the unwrapped model itself.
    """
    accelerator = run.accelerator
    if accelerator.distributed_type != DistributedType.FSDP:
        return accelerator.unwrap_model(model)
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    # Every process takes part in the gather; only the main process receives the full tensors (on the CPU).
    state = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    if not accelerator.is_main_process:
        return None
    whole = build_task_model(run)
    whole.load_state_dict(state)
    return whole.to(accelerator.device)


def run_steps(
    run: Run, model, optimizer, scheduler, stream, state: dict, total_steps: int, curricula, clock=None
) -> None:
    """Optimiser steps from `state["global_step"]` to `total_steps`, or until the `TrainingClock`'s budget is spent
    (every process stops at the same step): log, checkpoint, and record curricula."""
    args, accelerator = run.args, run.accelerator
    kill_at = int(os.environ.get(KILL_AT_STEP_ENV, "0"))
    progress = tqdm(
        total=total_steps,
        initial=state["global_step"],
        desc=f"train {args.architecture}",
        disable=not accelerator.is_local_main_process,
    )
    started = time.time() - state["wall_time_s"]
    cpu_started = time.process_time() - state.get("cpu_time_s", 0.0)  # CPU seconds of this process, all threads
    clock = clock or TrainingClock(None)
    clock.update(state["wall_time_s"])
    model.train()
    batches = stream.iter_from(state["global_step"])
    while state["global_step"] < total_steps and not clock.expired:
        loss, terms = backward_in_micro_batches(run, model, next(batches))
        if args.grad_clip:
            accelerator.clip_grad_norm_(model.parameters(), args.grad_clip)
        optimizer.step()
        if clock.budget_s:  # the slowest process's clock, so that all stop at the same step
            elapsed = torch.tensor(time.time() - started, dtype=torch.float64, device=accelerator.device)
            clock.update(accelerator.reduce(elapsed, "max").item())
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        state["global_step"] += 1
        step = state["global_step"]
        stop = stop_request_seen(run)
        last = step == total_steps or clock.expired or stop
        if clock.expired:
            state["stopped_by"] = "max_train_minutes"
        elif stop and step < total_steps:
            state["stopped_by"] = STOPPED_BY_REQUEST
        if step % args.log_every == 0 or last:
            values = {name: accelerator.reduce(value.detach(), "mean").item() for name, value in terms.items()}
            values["loss"] = accelerator.reduce(loss.detach(), "mean").item()
            state["curriculum"] = {c.field: c.value_at(step - 1) for c in curricula}
            record = {"step": step, "lr": scheduler.get_last_lr()[0], **values, **state["curriculum"]}
            state["history"].append(record)
            accelerator.log({f"train/{key}": value for key, value in record.items() if key != "step"}, step=step)
            progress.set_postfix(loss=f"{values['loss']:.4f}")
        progress.update(1)
        if args.eval_every and step % args.eval_every == 0:
            eval_wall, eval_cpu = time.time(), time.process_time()
            scores = validation_scores(run, model)
            started += time.time() - eval_wall  # the training clocks leave the evaluation out
            cpu_started += time.process_time() - eval_cpu
            if scores is not None:
                train_time = {"train_wall_s": time.time() - started, "train_cpu_s": time.process_time() - cpu_started}
                record = {"step": step, **train_time, **scores}
                state.setdefault("validation_history", []).append(record)
                append_validation(run.output_dir, record)
                accelerator.log({f"validation/{key}": value for key, value in scores.items()}, step=step)
        if step % args.checkpoint_every == 0 or last:
            state["wall_time_s"], state["cpu_time_s"] = time.time() - started, time.process_time() - cpu_started
            save_checkpoint(accelerator, run.output_dir, step, state, args.keep_checkpoints)
        if kill_at and step == kill_at:
            os._exit(137)
        if stop:
            break
    progress.close()
    if state.get("stopped_by") == STOPPED_BY_REQUEST and accelerator.is_main_process:
        clear_stop(run.output_dir)
    state["wall_time_s"], state["cpu_time_s"] = time.time() - started, time.process_time() - cpu_started


def stop_request_seen(run: Run) -> bool:
    """Whether a `STOP` file asks the run to end (`training.progress`); every process gets the same answer."""
    seen = stop_requested(run.output_dir)
    if run.accelerator.num_processes > 1:
        flag = torch.tensor(float(seen), device=run.accelerator.device)
        seen = bool(run.accelerator.reduce(flag, "max").item())
    return seen


def validation_scores(run: Run, model) -> dict | None:
    """The model's numbers on the validation split (no baselines), scored by the main process; `None` elsewhere or
    when the task has no validation split."""
    accelerator, data = run.accelerator, run.data
    scores = None
    if accelerator.is_main_process and data.splits is not None and "validation" in data.splits:
        unwrapped = accelerator.unwrap_model(model)
        unwrapped.eval()
        with torch.no_grad():
            request = EvalRequest(run.args.task, unwrapped, data, "validation", run.args.eval_batch_size, False)
            result = run.family.evaluate(request)
        unwrapped.train()
        model_scores = result.get("model", result)
        scores = {key: value for key, value in model_scores.items() if isinstance(value, (int, float))}
    accelerator.wait_for_everyone()
    return scores


def finished_metrics(run: Run, total_steps: int, checksums: list[float]) -> dict | None:
    """The `metrics.json` of this very run, when an earlier attempt evaluated it and then failed to export the model
    (a full disk, a missing package): same steps and the same weights, so the evaluation is not repeated."""
    import json

    try:
        metrics = json.loads((run.output_dir / "metrics.json").read_text())
    except (OSError, ValueError):
        return None
    same = (
        isinstance(metrics, dict)
        and isinstance(metrics.get("train"), dict)
        and metrics["train"].get("steps") == total_steps
        and metrics.get("weights_checksum_per_process") == checksums
        and metrics.get("run_config", {}).get("task") == run.args.task
    )
    return metrics if same else None


def finish_run(run: Run, model, state, total_steps, steps_per_epoch, checksums) -> dict:
    """Evaluate on the test split and write the reports, then the checkpoint folder and model card; push if asked.

    The reports come first, so a failed export loses no result; a `--resume` of such a run finds the final
    checkpoint and its `metrics.json` (same steps, same weights) and retries only the export.
    """
    args, data, family = run.args, run.data, run.family
    metrics = finished_metrics(run, total_steps, checksums)
    if metrics is not None:
        print(f"{run.output_dir / 'metrics.json'} already holds this run's evaluation; exporting the model only")
        finish_export(run, model, metrics)
        return metrics
    test = family.evaluate(EvalRequest(args.task, model, data, "test", args.eval_batch_size))
    # The validation split is scored too, so that reports select settings on it and quote the test number of the
    # selected one (never choosing on the test split).
    has_validation = data.splits is not None and "validation" in data.splits
    validation = (
        family.evaluate(EvalRequest(args.task, model, data, "validation", args.eval_batch_size))
        if has_validation
        else None
    )
    history = state["history"]
    metrics = {
        "task": args.task,
        "task_family": family.name,
        "architecture": args.architecture,
        "preset": args.preset,
        "num_parameters": model.num_parameters(),
        "state_size": state_size_report(model),
        "test": test,
        **({"validation": validation} if validation is not None else {}),
        "train": {
            "steps": total_steps,
            "epochs": total_steps / steps_per_epoch if steps_per_epoch else None,
            "final_loss": history[-1]["loss"] if history else float("nan"),
            "wall_time_s": state["wall_time_s"],
            "cpu_time_s": state["cpu_time_s"],
            "stopped_by": state.get("stopped_by", "steps"),
            "threads": torch.get_num_threads(),
            "history": history,
            "validation_history": state.get("validation_history", []),
        },
        "task_facts": data.description,
        "weights_checksum_per_process": checksums,
        "run_config": {**args.to_dict(), **data.description},
        "code": run.code,  # which code trained it (this process's, read when it started): versions, git commit
        "machine": run.machine,  # the host of the process that finished it: CPU model, CPUs, AVX-512, AMX
    }
    if len(state.get("code_segments", [])) > 1:  # resumed: the code of every process that trained it, by step
        metrics["code_segments"] = state["code_segments"]
    setting_changes = (read_run_marker(run.output_dir) or {}).get("setting_changes")
    if setting_changes:  # a resume continued with other settings: the saved and the new values, by step
        metrics["setting_changes"] = setting_changes
    write_reports(run.output_dir, metrics, family)
    finish_export(run, model, metrics)
    trained = f"{args.architecture}{features_label(args.overrides)} ({args.preset}) on {args.task}, {total_steps} steps"
    print(f"\n{trained}; reports in {run.output_dir}")
    print("\n".join(markdown_table(test)))
    return metrics


def finish_export(run: Run, model, metrics: dict) -> None:
    """Write `model/` (weights, config, tokenizer, card, modeling code) atomically, then push it if asked."""
    from ..hub import push_folder, render_model_card

    args, data, family = run.args, run.data, run.family
    request = args.task_request()
    model.config.hf_icl_run = {
        "task": args.task,
        "n_train": data.description.get("n_train"),
        "task_seed": args.task_seed,
        "task_options": args.task_options,
        "training": {**request.training, **request.training_option_values()},
    }

    def write_checkpoint(folder: Path):
        model.save_pretrained(folder)
        if os.environ.get(KILL_AT_EXPORT_ENV):
            os._exit(137)
        if data.tokenizer is not None:
            data.tokenizer.save_pretrained(folder)
        config_name = getattr(data.config, "name", None)
        card = render_model_card(
            model,
            metrics["test"],
            metrics["run_config"],
            family,
            repo_id=args.push_to_hub,
            dataset_config=config_name if isinstance(config_name, str) else None,
        )
        (folder / "README.md").write_text(card)

    write_folder_atomic(run.output_dir / "model", write_checkpoint)
    if args.push_to_hub:
        url = push_folder(run.output_dir / "model", args.push_to_hub)
        print(f"pushed {run.output_dir / 'model'} to {url}")
