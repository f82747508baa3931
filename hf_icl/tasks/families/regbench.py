"""The RegBench family (P1 §3): next-token prediction on random regular languages, scored against the automaton.

Training: token cross-entropy on every position; `|` labels are trained unless `train_on_delimiter=False` (the
reference code masked them, DESIGN §5.2; they are never scored). Evaluation: accuracy and TVD of the model and of
the in-context n-gram baselines on the same rows.
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
    train_on_delimiter = bool(request.training.get("train_on_delimiter", False))

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
    run_defaults={"n_train": DEFAULT_N_TRAIN},
    metric_note="Accuracy: share of positions whose argmax continuation is allowed by the true automaton. TVD: "
    "total variation distance between the predicted and the true next-token distribution, averaged over positions.",
    example_prompt="abc|",
)
