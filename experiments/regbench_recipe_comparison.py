"""Controlled comparison of training recipes on RegBench (issue #16): same data, model size, batch size and steps.

Three ways to train the same 2-layer, d=64 model, each scored by the package's RegBench evaluator on all test rows:

- `train.py`: the package's loop with its defaults (run in-process through `hf_icl.training.main`);
- `minimal-loop (hf_icl)`: a plain PyTorch loop on `icl_transformer` — uniformly random batches, loss on every
  position, AdamW(β=(0.9, 0.999), weight decay 0.01 on all parameters), constant learning rate after a linear
  warm-up from 0;
- `minimal-loop (GPT2LMHeadModel)`: the same loop on transformers' GPT-2 of the same size.

    python experiments/regbench_recipe_comparison.py --steps 1200 --seeds 0 1 --output docs/results/recipe

prints one Markdown table (recipe | seed | steps | accuracy | TVD | train s) and writes it with the raw numbers to
`--output`. Extra `train.py` flags after `--` are appended to the train.py recipe (e.g. `-- --lr 1e-3`).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, GPT2Config, GPT2LMHeadModel

import hf_icl
from hf_icl.tasks.lm_data import pad_collate
from hf_icl.tasks.regbench import regbench_tokenizer
from hf_icl.tasks.regbench.evaluation import evaluate_regbench
from hf_icl.training import main as train_main
from hf_icl.training.arguments import parse_args
from hf_icl.training.checkpoints import saved_run_config
from hf_icl.utils.atomic_files import write_json_atomic

SIZE = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2)


def minimal_loop(model, train_ids, steps, batch_size, lr, warmup, seed) -> float:
    """Random batches, loss on every position, constant LR after a warm-up from 0. Returns the training seconds."""
    generator = torch.Generator().manual_seed(seed)
    collate = pad_collate(0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.999), weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, step / warmup))
    model.train()
    started = time.time()
    for _ in range(steps):
        rows = torch.randint(len(train_ids), (batch_size,), generator=generator).tolist()
        batch = collate([{"input_ids": train_ids[i], "labels": train_ids[i]} for i in rows])
        loss = model(input_ids=batch["input_ids"], labels=batch["labels"]).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
    return time.time() - started


def run_minimal(kind: str, splits, tokenizer, args, seed: int) -> dict:
    torch.manual_seed(seed)
    if kind == "hf_icl":
        model = AutoModelForCausalLM.from_config(hf_icl.config_for("transformer", "tiny", vocab_size=20, **SIZE))
    else:
        config = GPT2Config(
            vocab_size=20, n_positions=1024, n_embd=64, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0
        )
        model = GPT2LMHeadModel(config)
    train_ids = tokenizer(list(splits["train"]["text"]))["input_ids"]
    seconds = minimal_loop(model, train_ids, args.steps, args.batch_size, args.minimal_lr, args.minimal_warmup, seed)
    scores = evaluate_regbench(model.eval(), tokenizer, splits["test"], baseline_orders=(), normalized_orders=())
    return {**scores["model"], "train_s": seconds}


def run_train_py(args, seed: int, extra: list[str]) -> dict:
    output = Path(args.runs_dir) / f"train_py-{args.steps}-s{seed}"
    argv = [
        "--task", "regbench", "--n-train", str(args.n_train), "--preset", "tiny", "--seed", str(seed),
        "--max-steps", str(args.steps), "--batch-size", str(args.batch_size), "--report-to", "none",
        "--threads", str(args.threads), "--output-dir", str(output), "--overwrite", "--checkpoint-every", "100000",
        *[f"--override={key}={value}" for key, value in SIZE.items()], *extra,
    ]  # fmt: skip
    finished = output / "metrics.json"
    metrics = json.loads(finished.read_text()) if same_run(output, argv) else train_main(argv)
    return {**metrics["test"]["model"], "train_s": metrics["train"]["wall_time_s"]}


def same_run(output: Path, argv: list[str]) -> bool:
    """Whether `output` holds a finished run of exactly the arguments `argv` resolves to today (defaults included),
    so that a change of `train.py`'s defaults reruns it instead of reusing its stale score."""
    saved = saved_run_config(output)
    if saved is None or not (output / "metrics.json").is_file():
        return False
    ignored = {"output_dir", "overwrite", "resume"}
    wanted = json.loads(json.dumps(parse_args(argv).to_dict()))  # tuples as the saved JSON lists
    return {k: v for k, v in saved.items() if k not in ignored} == {k: v for k, v in wanted.items() if k not in ignored}


def mean_and_spread(values: list[float]) -> str:
    """`mean ± sample standard deviation` (the deviation only from two values on)."""
    if len(values) < 2:
        return f"{statistics.mean(values):.4f}"
    return f"{statistics.mean(values):.4f} ± {statistics.stdev(values):.4f}"


def main(argv=None) -> list[dict]:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1200)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--n-train", type=int, default=2500)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--minimal-lr", type=float, default=3e-3)
    parser.add_argument("--minimal-warmup", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--recipes", nargs="+", default=["train.py", "hf_icl", "gpt2"])
    parser.add_argument("--output", default="docs/results/recipe", help="where the table and the numbers go")
    parser.add_argument("--runs-dir", default="outputs/recipe_comparison", help="train.py's run folders (weights)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    splits = hf_icl.load_task("regbench", n_train=args.n_train, seed=0)
    tokenizer = regbench_tokenizer()
    names = {
        "train.py": "train.py",
        "hf_icl": "minimal loop (icl_transformer)",
        "gpt2": "minimal loop (GPT2LMHeadModel)",
    }
    rows = []
    for seed in args.seeds:
        for recipe in args.recipes:
            if recipe == "train.py":
                result = run_train_py(args, seed, extra)
            else:  # minimal loops keep their scores beside train.py's run folders, so a rerun only adds new points
                cached = Path(args.runs_dir) / f"minimal_{recipe}-{args.steps}-s{seed}.json"
                if cached.is_file():
                    result = json.loads(cached.read_text())
                else:
                    result = run_minimal(recipe, splits, tokenizer, args, seed)
                    write_json_atomic(cached, result)
            rows.append({"recipe": names[recipe], "seed": seed, "steps": args.steps, **result})
            print(json.dumps(rows[-1]), flush=True)
    lines = ["| recipe | seed | steps | accuracy | TVD | train s |", "|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(
            f"| {row['recipe']} | {row['seed']} | {row['steps']} | {row['accuracy']:.4f} | {row['tvd']:.4f} | "
            f"{row['train_s']:.0f} |"
        )
    for recipe in dict.fromkeys(row["recipe"] for row in rows):
        mine = [row for row in rows if row["recipe"] == recipe]
        accuracy, tvd = (mean_and_spread([r[key] for r in mine]) for key in ("accuracy", "tvd"))
        lines.append(f"| **{recipe} (mean ± sd)** | {len(mine)} seeds | {args.steps} | {accuracy} | {tvd} | |")
    ours = {row["seed"]: row for row in rows if row["recipe"] == "train.py"}
    for recipe in dict.fromkeys(row["recipe"] for row in rows if row["recipe"] != "train.py"):
        pairs = [(ours[row["seed"]], row) for row in rows if row["recipe"] == recipe and row["seed"] in ours]
        if pairs:  # paired by seed number, the differences' mean ± sd
            accuracy, tvd = (mean_and_spread([a[key] - b[key] for a, b in pairs]) for key in ("accuracy", "tvd"))
            lines.append(f"| train.py − {recipe}, paired by seed | {len(pairs)} seeds | {args.steps} | {accuracy} | "
                         f"{tvd} | |")  # fmt: skip
    table = "\n".join(lines)
    print(table)
    output = Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    (output / f"comparison_{args.steps}.md").write_text(table + "\n")
    (output / f"comparison_{args.steps}.json").write_text(json.dumps({"rows": rows, "extra": extra}, indent=2))
    assert all(math.isfinite(r["accuracy"]) for r in rows)
    return rows


if __name__ == "__main__":
    main()
