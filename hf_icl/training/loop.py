"""The Accelerate training loop: AdamW + warm-up/cosine (paper 1, App. B), atomic checkpoints, exact resume."""

from __future__ import annotations

import math
import os
import shutil
import time
from pathlib import Path

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from torch.utils.data import DataLoader
from tqdm.auto import tqdm
from transformers import AutoModelForCausalLM

from ..evaluation.task_evaluators import evaluate_task
from ..models import config_for
from .arguments import RunArguments
from .checkpoints import load_trainer_state, prepare_output_dir, save_checkpoint, write_folder_atomic
from .data import LengthGroupedEpochSampler, pad_collate, task_bundle
from .report import write_reports

KILL_AT_STEP_ENV = "HF_ICL_TEST_KILL_AT_STEP"  # test hook: hard-exit after this step, as a SIGKILL would


def warmup_cosine(args: RunArguments, total_steps: int):
    """LR multiplier: linear warm-up from `warmup_start_lr` to `lr`, then cosine decay to `min_lr`."""
    warmup = int(args.warmup_ratio * total_steps)

    def factor(step: int) -> float:
        if step < warmup:
            return (args.warmup_start_lr + (args.lr - args.warmup_start_lr) * step / warmup) / args.lr
        progress = (step - warmup) / max(1, total_steps - warmup)
        return (args.min_lr + (args.lr - args.min_lr) * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))) / args.lr

    return factor


def build_optimizer(model, args: RunArguments) -> torch.optim.Optimizer:
    """AdamW with weight decay on matrices only (biases, norms and embeddings are not decayed)."""
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        (decay if param.ndim >= 2 and "embed" not in name else no_decay).append(param)
    groups = [{"params": decay, "weight_decay": args.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=args.lr, betas=(0.9, args.adam_beta2))


def weights_checksum(model) -> float:
    return float(sum(p.detach().double().sum() + p.detach().double().abs().sum() for p in model.parameters()))


def preflight(args: RunArguments) -> Path | None:
    """Checks that need no training: the run folder, the network (with `--push-to-hub`). Returns the resume point."""
    resume_from = prepare_output_dir(args.resolved_output_dir(), args.resume, args.overwrite)
    if args.push_to_hub:
        from ..hub import check_hub_reachable

        check_hub_reachable()
    if args.report_to == "trackio":
        import importlib.util

        if importlib.util.find_spec("trackio") is None:
            raise ValueError("report_to='trackio' needs the trackio package (pip install trackio)")
    return resume_from


def train(args: RunArguments, resume_from: Path | None = None) -> dict:
    """Train, evaluate, and write the run folder. Returns the metrics written to `metrics.json`."""
    output_dir = args.resolved_output_dir()
    accelerator = Accelerator(
        cpu=not torch.cuda.is_available(),
        log_with=None if args.report_to == "none" else args.report_to,
        project_dir=str(output_dir),
    )
    if args.overwrite and accelerator.is_main_process and output_dir.exists():
        shutil.rmtree(output_dir)
    accelerator.wait_for_everyone()
    set_seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)
    elif accelerator.num_processes == 1 and accelerator.device.type == "cpu":
        # `accelerate launch` pins a lone CPU process to OMP_NUM_THREADS=1; a single process should use the cores.
        torch.set_num_threads(len(os.sched_getaffinity(0)))

    with accelerator.main_process_first():
        bundle = task_bundle(args)
    config = config_for(args.architecture, args.preset, vocab_size=len(bundle.tokenizer), **args.overrides)
    config.pad_token_id, config.eos_token_id = bundle.tokenizer.pad_token_id, bundle.tokenizer.eos_token_id
    model = AutoModelForCausalLM.from_config(config)
    per_process_batch = max(1, args.batch_size // accelerator.num_processes)
    lengths = [len(ids) for ids in bundle.train["input_ids"]]
    loader = DataLoader(
        bundle.train,
        batch_size=per_process_batch,
        sampler=LengthGroupedEpochSampler(lengths, per_process_batch, args.seed),
        collate_fn=pad_collate(bundle.tokenizer.pad_token_id),
    )
    steps_per_epoch = math.ceil(len(bundle.train) / (per_process_batch * accelerator.num_processes))
    total_steps = args.max_steps or math.ceil(args.epochs * steps_per_epoch)
    optimizer = build_optimizer(model, args)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine(args, total_steps))
    model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)

    state = {"global_step": 0, "history": [], "wall_time_s": 0.0}
    if resume_from is not None:
        accelerator.load_state(str(resume_from))
        state = load_trainer_state(resume_from)
        accelerator.print(f"resumed from {resume_from} at step {state['global_step']}")
    if accelerator.is_main_process:
        output_dir.mkdir(parents=True, exist_ok=True)
    if args.report_to != "none":
        flat = {k: v if isinstance(v, (int, float, str, bool)) else str(v) for k, v in args.to_dict().items()}
        accelerator.init_trackers("hf_icl", config=flat)

    kill_at = int(os.environ.get(KILL_AT_STEP_ENV, "0"))
    progress = tqdm(
        total=total_steps,
        initial=state["global_step"],
        desc=f"train {args.architecture}",
        disable=not accelerator.is_local_main_process,
    )
    started = time.time() - state["wall_time_s"]
    model.train()
    last_loss = float("nan")
    while state["global_step"] < total_steps:
        epoch, skip = divmod(state["global_step"], steps_per_epoch)
        loader.set_epoch(epoch)
        batches = accelerator.skip_first_batches(loader, skip) if skip else loader
        for batch in batches:
            loss = model(**batch).loss
            accelerator.backward(loss)
            if args.grad_clip:
                accelerator.clip_grad_norm_(model.parameters(), args.grad_clip)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            state["global_step"] += 1
            step = state["global_step"]
            last_loss = accelerator.reduce(loss.detach(), "mean").item()
            if step % args.log_every == 0 or step == total_steps:
                state["history"].append({"step": step, "loss": last_loss, "lr": scheduler.get_last_lr()[0]})
                accelerator.log({"train/loss": last_loss, "train/lr": scheduler.get_last_lr()[0]}, step=step)
            progress.update(1)
            progress.set_postfix(loss=f"{last_loss:.4f}")
            if step % args.checkpoint_every == 0 or step == total_steps:
                state["wall_time_s"] = time.time() - started
                save_checkpoint(accelerator, output_dir, step, state, args.keep_checkpoints)
            if kill_at and step == kill_at:
                os._exit(137)
            if step >= total_steps:
                break
    progress.close()
    state["wall_time_s"] = time.time() - started

    checksum = torch.tensor([weights_checksum(model)], dtype=torch.float64, device=accelerator.device)
    checksums = accelerator.gather(checksum).tolist()
    unwrapped = accelerator.unwrap_model(model)
    metrics = None
    if accelerator.is_main_process:
        metrics = finish_run(args, bundle, unwrapped, state, total_steps, steps_per_epoch, checksums, output_dir)
    accelerator.wait_for_everyone()
    accelerator.end_training()
    return metrics


def finish_run(args, bundle, model, state, total_steps, steps_per_epoch, checksums, output_dir: Path) -> dict:
    """Evaluate on the test split, write the checkpoint folder, reports and model card; push if asked."""
    from ..hub import push_folder, render_model_card

    test = evaluate_task(
        args.task, model, bundle.tokenizer, bundle.splits, "test", args.eval_batch_size, config=bundle.config
    )
    metrics = {
        "task": args.task,
        "architecture": args.architecture,
        "preset": args.preset,
        "num_parameters": model.num_parameters(),
        "test": test,
        "train": {
            "steps": total_steps,
            "epochs": total_steps / steps_per_epoch,
            "final_loss": state["history"][-1]["loss"] if state["history"] else float("nan"),
            "wall_time_s": state["wall_time_s"],
            "history": state["history"],
        },
        "task_facts": bundle.description,
        "weights_checksum_per_process": checksums,
        "run_config": {**args.to_dict(), **bundle.description},
    }

    model.config.hf_icl_run = {
        "task": args.task,
        "n_train": bundle.description["n_train"],
        "task_seed": args.task_seed,
        "task_options": args.task_options,
    }

    def write_checkpoint(folder: Path):
        model.save_pretrained(folder)
        bundle.tokenizer.save_pretrained(folder)
        card = render_model_card(model, test, metrics["run_config"], repo_id=args.push_to_hub)
        (folder / "README.md").write_text(card)

    write_folder_atomic(output_dir / "model", write_checkpoint)
    write_reports(output_dir, metrics)
    if args.push_to_hub:
        url = push_folder(output_dir / "model", args.push_to_hub)
        print(f"pushed {output_dir / 'model'} to {url}")
    return metrics
