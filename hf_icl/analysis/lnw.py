"""Learned n-gram reweighting on RegBench: train LNW, LNW_r, LNW_b and score them (P1 §5.3, App. D; issue #14).

`python -m hf_icl.analysis lnw --variant {counts,frequencies,existence,all} [--n-train 2500] [--epochs N | --preset
{paper,cpu}] --output DIR` trains each variant on the RegBench training split (plateau schedule on the validation
split), saves it to `DIR/<variant>/` (`LearnedNgramReweighting.from_pretrained` loads it), scores it on the test
split with the models' evaluator (`regbench_metrics`, micro-averaged accuracy and TVD) next to the in-context
n-gram baselines on the same rows, and writes `DIR/metrics.json` and `DIR/lnw_loss_curves.png`.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from ..baselines.lnw import PAPER_NAMES, TRAINING_PRESETS, VARIANTS, train_lnw
from ..tasks import task_builder, task_config
from ..tasks.regbench.evaluation import evaluate_regbench
from ..tasks.regbench.metrics import regbench_metrics
from ..utils.atomic_files import atomic_path, write_json_atomic
from ..utils.validation import (
    OPTIONAL_POSITIVE_INT,
    POSITIVE_INT,
    SEED,
    Limit,
    check_limits,
    check_output_folder,
    naming,
)
from . import regbench_common as common

COMMAND = "lnw"  # python -m hf_icl.analysis lnw
TASK_FAMILY = common.TASK_FAMILY  # the task family whose models it reads (`python -m hf_icl.analysis --help`)
DESCRIPTION = """P1 App. D learned n-gram reweighting (LNW, LNW_r, LNW_b): train on RegBench, score on its test split.

Writes DIR/<variant>/ (config.json + model.safetensors), DIR/metrics.json and DIR/lnw_loss_curves.png."""

PAPER_NOTE = (
    "P1 gives no accuracy or TVD for the LNW models: they appear only in Fig. 5 (pairwise TVD between models, "
    "LNW_r being closest to the 12-layer Transformer). Paper n-gram baselines at N = 2500 (Fig. 2): 3-gram TVD "
    "0.255 / accuracy 0.935, 2-gram 0.324 / 0.829; Transformer 0.203 / 0.926 (Table 1)."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--variant", choices=(*VARIANTS, "all"), default="all", help="features to train (default all)")
    parser.add_argument("--n-train", type=int, default=2500, help="RegBench training automata (default 2500)")
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--epochs", type=int, help="training epochs (overrides --preset)")
    length.add_argument(
        "--preset",
        choices=tuple(TRAINING_PRESETS),
        default="paper",
        help=", ".join(f"{k}: {v['epochs']} epochs" for k, v in TRAINING_PRESETS.items()) + " (default paper)",
    )
    parser.add_argument("--output", required=True, type=Path, help="folder for the models, metrics.json and PNG")
    parser.add_argument("--max-rows", type=int, help="use at most this many rows of each split (quick runs)")
    parser.add_argument("--mask-delimiter", action="store_true", help="mask `|` targets, as the authors' script did")
    parser.add_argument("--seed", type=int, default=0, help="initialisation and shuffling seed")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")


LIMITS = {
    "n_train": POSITIVE_INT,
    "epochs": OPTIONAL_POSITIVE_INT,
    "max_rows": OPTIONAL_POSITIVE_INT,
    "seed": SEED,
    "threads": Limit(int, low=1, high=1024),
}
"""The allowed range of every numeric argument."""


def check_arguments(args: argparse.Namespace) -> None:
    """Every argument before any data is generated: the ranges, the task config and the output folder."""
    check_limits(args, LIMITS)
    with naming("--n-train"):
        task_config(common.TASK, n_train=args.n_train)
    check_output_folder(args.output, "--output")


def regbench_rows(n_train: int, max_rows: int | None) -> dict[str, list[dict]]:
    """The RegBench splits at `n_train` (the models' data), each cut to `max_rows` rows when given."""
    builder = task_builder(common.TASK, n_train=n_train)
    builder.download_and_prepare()
    splits = builder.as_dataset()
    return {
        name: [dict(row) for row in splits[name].select(range(min(max_rows or len(splits[name]), len(splits[name]))))]
        for name in ("train", "validation", "test")
    }


def run(args: argparse.Namespace) -> dict:
    torch.set_num_threads(args.threads)
    variants = VARIANTS if args.variant == "all" else (args.variant,)
    epochs = args.epochs if args.epochs is not None else TRAINING_PRESETS[args.preset]["epochs"]
    rows = regbench_rows(args.n_train, args.max_rows)
    test = rows["test"]
    results = {
        "n_train": args.n_train,
        "rows": {name: len(split) for name, split in rows.items()},
        "num_test_positions": sum(len(r["text"]) - 1 for r in test),
        "epochs": epochs,
        "preset": None if args.epochs is not None else args.preset,
        "seed": args.seed,
        "train_on_delimiter": not args.mask_delimiter,
        "threads": args.threads,
        "lnw": {},
        "paper": PAPER_NOTE,
    }
    args.output.mkdir(parents=True, exist_ok=True)
    for variant in variants:
        started = time.process_time()

        def log(record, name=PAPER_NAMES[variant]):
            print(
                f"{name} epoch {record['epoch']}: train {record['train_loss']:.4f}, "
                f"validation {record['validation_loss']:.4f}, lr {record['lr']:.1e}",
                flush=True,
            )

        model, history = train_lnw(
            variant,
            rows["train"],
            rows["validation"],
            epochs=epochs,
            seed=args.seed,
            train_on_delimiter=not args.mask_delimiter,
            log=log,
        )
        cpu_seconds = time.process_time() - started
        model.save_pretrained(args.output / variant)
        scores = regbench_metrics([model.predict_proba(r["text"]) for r in test], test)
        results["lnw"][variant] = {
            "name": PAPER_NAMES[variant],
            **scores,
            "train_cpu_seconds": cpu_seconds,
            "final_validation_loss": history[-1]["validation_loss"],
            "history": history,
        }
        print(f"{PAPER_NAMES[variant]}: accuracy {scores['accuracy']:.4f}, TVD {scores['tvd']:.4f}", flush=True)
    results["baselines"] = evaluate_regbench(None, None, test)["baselines"]
    write_json_atomic(args.output / "metrics.json", results)
    plot(args.output / "lnw_loss_curves.png", results)
    return results


def plot(path: Path, results: dict) -> None:
    """Loss curves per variant (train solid, validation dashed) and test accuracy / TVD beside the n-gram baselines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (curves, bars) = plt.subplots(1, 2, figsize=(11, 4))
    for k, scored in enumerate(results["lnw"].values()):
        epochs, name = [r["epoch"] for r in scored["history"]], scored["name"]
        curves.plot(epochs, [r["train_loss"] for r in scored["history"]], color=f"C{k}", label=f"{name} train")
        curves.plot(
            epochs, [r["validation_loss"] for r in scored["history"]], color=f"C{k}", ls="--", label=f"{name} val"
        )
    curves.set(xlabel="epoch", ylabel="token cross-entropy", title=f"LNW training, N = {results['n_train']}")
    curves.legend(fontsize=8)
    scores = {s["name"]: s for s in results["lnw"].values()} | results["baselines"]
    names = list(scores)
    for offset, metric in ((-0.2, "accuracy"), (0.2, "tvd")):
        values = [scores[n][metric] for n in names]
        bars.barh([i + offset for i in range(len(names))], values, height=0.4, label=metric)
        for i, value in enumerate(values):
            bars.text(value + 0.005, i + offset, f"{value:.3f}", va="center", fontsize=7)
    bars.set_yticks(range(len(names)), names, fontsize=8)
    bars.invert_yaxis()
    bars.set(xlim=(0, 1.3), title=f"RegBench test ({results['rows']['test']} rows)")
    bars.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=100)
    plt.close(fig)
