"""The RegBench family (P1 §3): next-token prediction on random regular languages, scored against the automaton.

Training: token cross-entropy on every position; `|` labels are trained unless `train_on_delimiter=False` (the
reference code masked them, DESIGN §5.2; they are never scored). The default run is a CPU recipe that leaves the
1-/2-gram plateau in a few minutes (the tiny model, 1,500 steps at 3e-3); `experiments/configs/regbench_cpu.yaml`
is the 25-minute recipe and the task preset `paper` is P1 Appendix B's (`--task-preset paper`).
Evaluation: accuracy and TVD of the model and of the in-context n-gram baselines on the same rows.
"""

from __future__ import annotations

from ...tokenization import regbench_tokenizer
from ..family import EvalRequest, TaskEntry, TaskFamily, TaskRequest
from ..lm_data import causal_lm_data
from ..objectives import token_cross_entropy
from ..regbench import CONFIG_FIELDS, RegBenchBuilder

DEFAULT_N_TRAIN = 2500


def prepare_data(request: TaskRequest):
    from .. import task_builder

    tokenizer = regbench_tokenizer()
    n_train = request.n_train or DEFAULT_N_TRAIN
    builder = task_builder(request.task, **{**request.builder_overrides(), "n_train": n_train})
    builder.download_and_prepare()
    splits = builder.as_dataset()
    delimiter = tokenizer.convert_tokens_to_ids("|")
    train_on_delimiter = bool(request.training.get("train_on_delimiter", True))

    def encode(batch):
        ids = tokenizer(batch["text"])["input_ids"]
        if train_on_delimiter:
            return {"input_ids": ids, "labels": ids}
        return {"input_ids": ids, "labels": [[-100 if t == delimiter else t for t in seq] for seq in ids]}

    description = {"train_on_delimiter": train_on_delimiter, "n_train": n_train}
    return causal_lm_data(splits, tokenizer, encode, description, builder.config)


def evaluate(request: EvalRequest) -> dict:
    from ...evaluation.regbench_eval import evaluate_regbench

    rows = request.data.splits[request.split]
    return evaluate_regbench(request.model, request.data.tokenizer, rows, batch_size=request.batch_size)


FAMILY = TaskFamily(
    name="regbench",
    tasks={"regbench": TaskEntry(RegBenchBuilder, None, CONFIG_FIELDS)},
    prepare_data=prepare_data,
    head="causal_lm",
    objective=token_cross_entropy,
    evaluate=evaluate,
    run_defaults={
        "n_train": DEFAULT_N_TRAIN,
        "preset": "tiny",
        "max_steps": 1500,
        "lr": 3e-3,
    },
    presets={
        # P1 Appendix B at N = 2500 (DESIGN §5.3): 8 layers, d = 128, 1 head, lr 1e-4, wd 0.1, batch 32,
        # 200 epochs with 20 warm-up epochs, cosine; the reference code masked `|` labels.
        "paper": {
            "preset": "paper_n2500",
            "lr": 1e-4,
            "min_lr": 2.5e-5,
            "weight_decay": 0.1,
            "batch_size": 32,
            "epochs": 200,
            "max_steps": None,
            "warmup_ratio": 0.1,
            "warmup_steps": None,
            "lr_schedule": "cosine",
            "adam_beta2": 0.99,
            "train_on_delimiter": False,
        },
    },
    metric_note="Accuracy: share of positions whose argmax continuation is allowed by the true automaton. TVD: "
    "total variation distance between the predicted and the true next-token distribution, averaged over positions.",
    example_prompt="abc|",
)
