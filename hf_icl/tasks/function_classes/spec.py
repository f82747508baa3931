"""The in-context regression suite (paper 5 §3.2, Table 2; DESIGN §5.5): one family per function class.

Training draws fresh prompts every step (`FunctionClassSampler`, from (seed, rank, step)) with the curriculum of
P5 App. A as step curricula on `n_dims` and `n_points`, so these tasks are online (`TaskEntry.builder` is `None`;
their fixed evaluation prompts come from `FunctionClassBuilder` all the same). A class with a fixed training set
(vector MQAR, P5 App. B.2: the builder's `train` split) trains on it for epochs, so `load_task` builds it. Each task's
entry carries its :class:`~.classes.FunctionClass` (`spec`) and its baselines.
The objective is the model's in-context loss: MSE at the scored examples (chain-of-thought adds the step's error),
BCE of the logit against (1 + y)/2 for sparse parity. Evaluation scores
the fixed test prompts of `FunctionClassBuilder` against the number of in-context examples, with the classical
baselines on the same prompts, the out-of-distribution prompts and the forward FLOPs per sequence.

Task options (`--task-option`, `load_task(...)`): `n_dims`, `n_points` (the final values; curricula grow towards
them), `input_dim`, the task's own options (`sparsity`, `p`, `k`, `n_queries`, ...) and the out-of-distribution ones.
Presets (`--task-preset`): `paper` (P5 App. A/B: Adam, batch 64, constant learning rate, 500k steps, the
curriculum; vector MQAR: 300k sequences for 64 epochs) and `cpu` (the scaled settings of `experiments/`).
"""

from __future__ import annotations

import dataclasses

import torch
from torch.nn import functional as F

from ...evaluation.flops import forward_flops
from ..family import EvalRequest, TaskData, TaskEntry, TaskFamily, TaskRequest
from ..objectives import ObjectiveResult
from .classes import FUNCTION_CLASSES, FunctionClass, FunctionClassSampler, model_inputs
from .evaluation import evaluate_prompts, ood_results, plot_curves
from .export import EXPORT
from .function_class_data import OPTION_FIELDS, FunctionClassBuilder, model_fields, prompts_from_rows, validate_config


def in_context_loss(model, batch: dict) -> ObjectiveResult:
    """The model's own in-context loss: MSE over scored examples (plus the step error with chain-of-thought)."""
    outputs = model(**batch)
    return ObjectiveResult(outputs.loss, dict(outputs.aux_losses or {}))


def parity_loss(model, batch: dict) -> ObjectiveResult:
    """Binary cross-entropy of the prediction as a logit against (1 + y)/2, y = ±1 (P5 §3.2.3)."""
    outputs = model(**{key: value for key, value in batch.items() if key != "targets"})
    labels = (1 + batch.get("targets", batch["ys"])) / 2
    loss = F.binary_cross_entropy_with_logits(outputs.predictions, labels.to(outputs.predictions.dtype))
    return ObjectiveResult(loss, dict(outputs.aux_losses or {}))


class PromptSet(torch.utils.data.Dataset):
    """A fixed prompt set (vector MQAR's training split) as a map-style dataset; `collate` gives model batches.

    Args:
        prompts: stacked tensors (`prompts_from_rows`).
        n_labelled: the pairs whose ys are model inputs (the rest are queries).
    """

    def __init__(self, prompts: dict, n_labelled: int):
        self.prompts, self.n_labelled = prompts, n_labelled

    def __len__(self) -> int:
        return self.prompts["xs"].shape[0]

    def __getitem__(self, index: int) -> dict:
        return {key: value[index] for key, value in self.prompts.items()}

    def collate(self, rows: list[dict]) -> dict:
        stacked = {key: torch.stack([row[key] for row in rows]) for key in rows[0]}
        return model_inputs({**stacked, "n_labelled": self.n_labelled})


def resolved_config(builder) -> tuple[int, int, dict, int]:
    """(n_dims, n_points, options, input_dim) of a prepared builder's config."""
    resolved = builder.config.resolved()
    return resolved["n_dims"], resolved["n_points"], resolved["options"], builder.config.input_dim or resolved["n_dims"]


def check_options(task: str, options: dict) -> None:
    """Validate `--task-option` values against the task's prompt-set config before any work (`ValueError` names the
    field, the value and what is allowed)."""
    config = next(c for c in FunctionClassBuilder.BUILDER_CONFIGS if c.name == task)
    unknown = sorted(set(options) - set(OPTION_FIELDS))
    if unknown:
        raise ValueError(f"{', '.join(unknown)} are not options of task {task!r}; allowed: {', '.join(OPTION_FIELDS)}")
    validate_config(dataclasses.replace(config, **options))


def prepare_data(request: TaskRequest) -> TaskData:
    task = request.task
    builder = FunctionClassBuilder(config_name=task, **request.builder_overrides())
    builder.download_and_prepare()
    splits = builder.as_dataset()
    n_dims, n_points, options, input_dim = resolved_config(builder)
    spec = FUNCTION_CLASSES[task]
    if spec.fixed_training_set:  # e.g. vector MQAR's, P5 App. B.2
        train = PromptSet(prompts_from_rows(splits["train"]), spec.n_labelled(options))
        collate, n_train = train.collate, len(train)
    else:
        train = FunctionClassSampler(task, n_dims=n_dims, n_points=n_points, input_dim=input_dim, **options)
        collate, n_train = None, None
    description = {
        "n_train": n_train,
        "n_dims": n_dims,
        "n_points": n_points,
        "input_dim": input_dim,
        "options": options,
        "format": "x₁ y₁ x₂ y₂ … interleaved (y zero-padded to d); predictions read at the x positions",
    }
    fields = model_fields(task, n_dims, input_dim, **options)
    return TaskData(train, collate, fields, splits=splits, config=builder.config, description=description)


def evaluate(request: EvalRequest) -> dict:
    task, config = request.task, request.data.config
    spec = FUNCTION_CLASSES[task]
    resolved = config.resolved()
    n_dims, n_points, options = resolved["n_dims"], resolved["n_points"], resolved["options"]
    prompts = prompts_from_rows(request.data.splits[request.split])
    if spec.labelled_pairs is not None:
        prompts["n_labelled"] = spec.n_labelled(options)
    results = evaluate_prompts(task, request.model, prompts, n_dims, options, request.batch_size)
    length = spec.sequence_length(n_points, options)
    results["task_facts"] = {"n_dims": n_dims, "n_points": n_points, "tokens_per_sequence": length, **options}
    if request.model is not None:
        results["flops_per_sequence"] = forward_flops(request.model, length)
        if spec.gaussian and request.split == "test" and not any(key in options for key in ("x_scale", "y_noise")):
            input_dim = config.input_dim or n_dims
            results["ood"] = ood_results(task, request.model, n_points, n_dims, options, input_dim, request.batch_size)
    return results


_PAPER_OPTIMIZER = {
    "batch_size": 64,
    "lr": 1e-4,
    "lr_schedule": "constant",
    "warmup_steps": 0,
    "weight_decay": 0.0,
    "adam_beta2": 0.999,
    "grad_clip": 10.0,
}
"""P5 App. A.2: Adam at a fixed learning rate (grid 5e-5 … 4e-4 around 1e-4), batch 64, gradient clipping."""


def _curriculum_text(task: str) -> list[str]:
    stages = FUNCTION_CLASSES[task].curriculum
    return [f"{name}={start}:{end}:{step}:{every}" for name, start, end, step, every in stages]


def paper_preset(task: str) -> dict:
    """P5's run settings for `task` (App. A, B; the reference configs' learning rates)."""
    spec = FUNCTION_CLASSES[task]
    return {**_PAPER_OPTIMIZER, "max_steps": 500_000, "curriculum": _curriculum_text(task), **spec.paper_settings}


def cpu_preset(task: str) -> dict:
    """CPU-minutes settings: the paper's optimiser at a larger learning rate and far fewer steps, then the class's
    own (`FunctionClass.cpu_settings`, the scaled runs of `experiments/in_context_regression/`)."""
    return {**_PAPER_OPTIMIZER, "max_steps": 2000, "lr": 1e-3, **FUNCTION_CLASSES[task].cpu_settings}


def _entry(task: str, spec: FunctionClass) -> TaskEntry:
    builder = FunctionClassBuilder if spec.fixed_training_set else None  # else online, evaluated on builder prompts
    check = None if spec.fixed_training_set else (lambda options: check_options(task, options))
    return TaskEntry(builder, task, OPTION_FIELDS, check_options=check, spec=spec, baselines=spec.baselines,
                     options_builder=FunctionClassBuilder)


def _family(task: str, spec: FunctionClass) -> TaskFamily:
    metric = (
        "Sign accuracy (1 + sign(ŷ)·y)/2 against the number of in-context examples"
        if spec.metric == "accuracy"
        else "Squared error of ŷ_i divided by the task's normaliser (d, the sparsity k, or 1), against the number of "
        "(clean) in-context examples; `error_final` is the last point of the curve (where clean counts vary by prompt: "
        "the largest count 90 % of the prompts reach)"
    )
    return TaskFamily(
        name=task,
        tasks={task: _entry(task, spec)},
        prepare_data=prepare_data,
        head="regression",
        objective=parity_loss if spec.metric == "accuracy" else in_context_loss,
        evaluate=evaluate,
        plot=plot_curves,
        plot_name="in_context_curves.png",
        run_defaults=cpu_preset(task),
        presets={"paper": paper_preset(task), "cpu": cpu_preset(task)},
        metric_note=metric + ". Baselines are scored on the same prompts (P5 §3.1; DESIGN §5.5).",
        entry_fields=("spec", "baselines"),
        export=EXPORT,
    )


FAMILIES: tuple[TaskFamily, ...] = tuple(_family(task, spec) for task, spec in FUNCTION_CLASSES.items())
"""One family per function class (each has its own objective, curriculum and presets)."""
