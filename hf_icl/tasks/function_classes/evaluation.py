"""Evaluation of in-context regression (paper 5 §3.1; Garg et al., 2022; DESIGN §5.5): error against the number of
in-context examples, for the model and the classical baselines on the same prompts, plus cheap out-of-distribution
prompts and the forward FLOPs per sequence.

The error of example i is (ŷ_i − y_i)² divided by the task's normaliser (d for linear and NN tasks, the sparsity k
for sparse linear regression, 1 for the tree; ‖v̂ − v‖² for vector MQAR); sparse parity scores (1 + sign(ŷ)·y)/2,
the sign accuracy where an undetermined 0 counts 1/2. A position's number of in-context examples is the number of
*scored* examples before it, so outlier tasks are read against clean examples (P5 Fig. 2, "eval at the 20th clean
example") and vector MQAR against earlier queries.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ...baselines import regression as baselines
from ..family import task_entry
from .classes import FUNCTION_CLASSES, model_inputs, normalizer, sample
from .function_class_data import OOD_VARIANTS

BASELINE_PROMPTS = {"lasso": 64, "gd_two_layer_nn": 64, "decision_tree": 64, "gradient_boosting": 16}
"""Baselines refitted per prompt and position run on the first prompts only (their cost grows with B·N fits)."""


def nearest_key(xs, ys, n_labelled: int) -> torch.Tensor:
    """Vector MQAR's exact retriever: the value of the key with the largest inner product with each x."""
    keys, values = xs[:, :n_labelled], ys[:, :n_labelled]
    best = (xs @ keys.transpose(1, 2)).argmax(-1)  # (B, N)
    return torch.gather(values, 1, best[..., None].expand(-1, -1, values.shape[-1]))


def baseline_predictions(name: str, prompts: dict) -> torch.Tensor:
    """(B, N) (or (B, N, d)) predictions of baseline `name` on a batch of prompts: one of
    `hf_icl.baselines.regression.BASELINES`, `least_squares_clean_pairs` or `nearest_key`."""
    xs, ys, mask = prompts["xs"], prompts["ys"], prompts.get("loss_mask")
    if name == "least_squares_clean_pairs":  # the fit uses only the clean pairs: an oracle-filtered estimator
        return baselines.least_squares(xs, ys, mask=mask)
    if name == "nearest_key":
        return nearest_key(xs, ys, prompts["n_labelled"])
    return baselines.BASELINES[name](xs, ys)


def example_scores(task: str, predictions, prompts: dict, n_dims: int, options=None) -> torch.Tensor:
    """(B, N) per-example scores: normalised squared error, or sign accuracy for sparse parity."""
    targets = prompts.get("targets", prompts["ys"]).to(torch.float32)
    predictions = predictions.to(torch.float32)
    if FUNCTION_CLASSES[task].metric == "accuracy":
        return (1 + torch.sign(predictions) * targets) / 2
    errors = (predictions - targets) ** 2
    if errors.dim() == 3:
        errors = errors.sum(-1)  # ‖v̂ − v‖² for vector outputs
    return errors / normalizer(task, n_dims, **(options or {}))


def _by_count(scores: torch.Tensor, mask: torch.Tensor) -> tuple[list[int], list[float], list[int]]:
    """Per number k of scored examples before a scored position: k, the mean score there, and the prompts that have
    such a position."""
    before = torch.cumsum(mask.long(), dim=1) - mask.long()  # scored examples strictly before each position
    counts, values, prompts = [], [], []
    for k in range(int(before[mask].max()) + 1 if mask.any() else 0):
        chosen = mask & (before == k)
        if chosen.any():
            counts.append(k)
            values.append(float(scores[chosen].mean()))
            prompts.append(int(chosen.any(dim=1).sum()))
    return counts, values, prompts


def curve(scores: torch.Tensor, mask: torch.Tensor | None) -> tuple[list[int], list[float]]:
    """Mean score against the number of scored examples before each scored position."""
    mask = torch.ones_like(scores, dtype=torch.bool) if mask is None else mask.bool()
    counts, values, _ = _by_count(scores, mask)
    return counts, values


FINAL_SUPPORT = 0.9
"""`*_final` is read at the largest count of earlier scored examples that this share of the prompts reaches."""


def summary(task: str, scores: torch.Tensor, mask) -> dict:
    """Scalar metrics: the mean over scored examples and the value at the end of the curve.

    Without a mask (or with the same scored examples in every prompt) the end is the last point. Where the number of
    scored examples varies by prompt (the outlier tasks: clean pairs are a binomial draw), the last points hold only
    the few prompts with the most clean pairs, so `*_final` is read at the largest count that `FINAL_SUPPORT` of the
    prompts reach (P5 reads many-outlier regression at the 20th clean example, which nearly every prompt reaches);
    `final_examples` names that count.
    """
    name = "accuracy" if FUNCTION_CLASSES[task].metric == "accuracy" else "error"
    mask = torch.ones_like(scores, dtype=torch.bool) if mask is None else mask.bool()
    counts, values, reached = _by_count(scores, mask)
    if not values:
        return {f"{name}_mean": float(scores[mask].mean()), f"{name}_final": float("nan")}
    final = max(i for i, n in enumerate(reached) if n >= FINAL_SUPPORT * reached[0])
    return {f"{name}_mean": float(scores[mask].mean()), f"{name}_final": values[final], "final_examples": counts[final]}


@torch.no_grad()
def _in_batches(model, prompts: dict, batch_size: int, keys, predict) -> torch.Tensor:
    """`predict(batch)` over the prompts in batches of `keys` (model inputs), in eval mode, concatenated on the CPU."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    inputs = model_inputs(prompts)
    outputs = []
    for start in range(0, prompts["xs"].shape[0], batch_size):
        batch = {key: inputs[key][start : start + batch_size].to(device) for key in keys if key in inputs}
        outputs.append(predict(batch).float().cpu())
    model.train(was_training)
    return torch.cat(outputs)


def model_predictions(model, prompts: dict, batch_size: int = 64) -> torch.Tensor:
    """The model's in-context predictions for every prompt, in batches (ŷ at x positions; CoT: ŷ at s positions)."""
    keys = ("xs", "ys", "ss", "y_tokens")  # not targets or loss_mask: no loss is needed
    return _in_batches(model, prompts, batch_size, keys, lambda batch: model(**batch).predictions)


def own_step_predictions(model, prompts: dict, batch_size: int = 64) -> torch.Tensor:
    """ŷ_i of chain-of-thought prompts when the query's step is the model's *own* ŝ_i (CoT inference, P5 Table 1).

    The earlier examples keep their given (x_j, s_j, y_j); ŝ_i is read at x_i (teacher-forced prefix), put in the
    place of s_i, and ŷ_i read at it. One forward per example on the prefix ending at that step, so it is exact for
    every architecture (nothing after s_i is seen). Returns (B, n) like `model_predictions`.
    """

    def predict(batch):
        xs, ys, ss = batch["xs"], batch["ys"], batch["ss"]
        own_steps = model(xs=xs, ys=ys, ss=ss).step_predictions.to(ss.dtype)  # (b, N, k): ŝ_i at every x_i
        predictions = []
        for i in range(ys.shape[1]):
            steps = torch.cat([ss[:, :i], own_steps[:, i : i + 1]], dim=1)  # (b, i + 1, k)
            # y_i sits after s_i, so the causal read-out at s_i never sees it
            prefix = model(xs=xs[:, : i + 1], ys=ys[:, : i + 1], ss=steps).predictions  # (b, i + 1)
            predictions.append(prefix[:, i])
        return torch.stack(predictions, dim=1)

    return _in_batches(model, prompts, batch_size, ("xs", "ys", "ss"), predict)


def evaluate_prompts(task, model, prompts, n_dims, options=None, batch_size=64, baseline_names=None) -> dict:
    """Scores, curves and summaries of the model (if any) and the baselines on one batch of prompts.

    With chain-of-thought steps (`ss`) the model is scored on its own steps (`own_step_predictions`: the paper's
    inference), and `results["model_teacher_forced_steps"]` holds its score with the true steps fed in.
    """
    results = {"model": {}, "baselines": {}, "curves": {}, "skipped_baselines": {}}
    predictors = []
    if model is not None and "ss" in prompts:
        predictors.append(("model", lambda p: own_step_predictions(model, p, batch_size)))
        predictors.append(("model_teacher_forced_steps", lambda p: model_predictions(model, p, batch_size)))
    elif model is not None:
        predictors.append(("model", lambda p: model_predictions(model, p, batch_size)))
    for name in task_entry(task).baselines if baseline_names is None else baseline_names:
        predictors.append((name, lambda p, name=name: baseline_predictions(name, p)))
    for name, predict in predictors:
        subset = prompts
        if name in BASELINE_PROMPTS:
            count = BASELINE_PROMPTS[name]
            subset = {k: v[:count] if torch.is_tensor(v) else v for k, v in prompts.items()}
        try:
            scores = example_scores(task, predict(subset), subset, n_dims, options)
        except ImportError as error:
            results["skipped_baselines"][name] = str(error)
            continue
        sub_mask = subset.get("loss_mask")
        metrics = summary(task, scores, sub_mask)
        if name.startswith("model"):
            results[name] = metrics
        else:
            results["baselines"][name] = metrics
            results.setdefault("baseline_prompts", {})[name] = int(scores.shape[0])
        examples, values = curve(scores, sub_mask)
        results["curves"][name] = values
        results.setdefault("examples", examples)
    return results


def ood_results(task, model, n_points, n_dims, options, input_dim, batch_size, count=256, seed=1234) -> dict:
    """The model and least squares on the out-of-distribution prompts (Garg et al. §4) of a Gaussian-x task."""
    out = {}
    for index, (name, variant) in enumerate(OOD_VARIANTS.items()):
        prompts = sample(task, count, n_points, n_dims, (seed, index), **options, **variant, input_dim=input_dim)
        scored = evaluate_prompts(task, model, prompts, n_dims, options, batch_size, ("least_squares",))
        out[name] = {"model": scored["model"], "least_squares": scored["baselines"]["least_squares"]}
        out[name]["curves"] = scored["curves"]
    return out


def plot_curves(results: dict, path: Path, title: str = "") -> None:
    """Error (or accuracy) against in-context examples: the model and every baseline on one PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    accuracy = "accuracy_mean" in results.get("model", {}) or any(
        "accuracy_mean" in m for m in results.get("baselines", {}).values()
    )
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    examples = results.get("examples", [])
    for name, values in results.get("curves", {}).items():
        xs = examples[: len(values)]
        values = np.asarray(values) if accuracy else np.clip(values, 1e-6, None)
        ax.plot(xs, values, label=name, lw=2.2 if name == "model" else 1.3, ls="-" if name == "model" else "--")
    ax.set_xlabel("in-context examples")
    ax.set_ylabel("accuracy" if accuracy else "squared error (normalised)")
    if not accuracy:
        ax.set_yscale("log")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
