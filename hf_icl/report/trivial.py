"""Trivial predictors, so that an outcome criterion can fail: a criterion that says a model *learns* a task must not
be met by predicting 0 or by predicting the mean of the context's targets.

Each is scored exactly as the evaluator scores a model (the task's per-example score and its `*_final` / `*_mean`
summaries) on fresh prompts of the run's own task and options; a criterion's `minus` part (a baseline the run
recorded on its own prompts) keeps the run's value. In-context regression and the other function-class tasks have
them; a run of another task family has none (`trivial_scores` returns `{}`).
"""

from __future__ import annotations

import torch

from ..tasks.function_classes.classes import FUNCTION_CLASSES, sample
from ..tasks.function_classes.evaluation import example_scores, summary
from .findings import criterion_name, criterion_value
from .papers import meets, rule_text
from .runs import RunRecord, Setting

PROMPTS, SEED = 512, 20_261_128


def _zero(prompts: dict) -> torch.Tensor:
    return torch.zeros_like(prompts.get("targets", prompts["ys"]), dtype=torch.float32)  # (B, N) or (B, N, d)


def _context_mean(prompts: dict) -> torch.Tensor:
    """ŷ_i = the mean of y_1 … y_{i−1} over the labelled pairs (0 at the first example)."""
    ys = prompts["ys"].to(torch.float32)  # (B, N) or (B, N, d)
    labelled = int(prompts.get("n_labelled", ys.shape[1]))
    seen = ys[:, :labelled]
    sums = torch.cumsum(seen, dim=1) - seen  # Σ_{j<i} y_j
    counts = torch.arange(labelled, dtype=torch.float32).clamp(min=1).view(1, -1, *([1] * (ys.dim() - 2)))
    means = sums / counts  # (B, labelled, ...)
    if labelled < ys.shape[1]:  # queries after the labelled pairs: the mean of all of them
        rest = seen.mean(dim=1, keepdim=True).expand(-1, ys.shape[1] - labelled, *ys.shape[2:])
        means = torch.cat([means, rest], dim=1)
    return means


PREDICTORS = {"zero": _zero, "context mean": _context_mean}


def trivial_scores(record: RunRecord) -> dict[str, dict[str, float]]:
    """`{predictor: {"model.<metric>": value}}` for a function-class run (its task, d, N and options), else `{}`."""
    task = record.metrics.get("task")
    facts = record.metrics.get("task_facts") or {}
    if task not in FUNCTION_CLASSES or "n_dims" not in facts or "n_points" not in facts:
        return {}
    options = dict(facts.get("options") or {})
    n_dims, n_points = int(facts["n_dims"]), int(facts["n_points"])
    prompts = sample(task, PROMPTS, n_points, n_dims, SEED, **options)
    found = {}
    for name, predict in PREDICTORS.items():
        scores = example_scores(task, predict(prompts), prompts, n_dims, options)
        metrics = summary(task, scores, prompts.get("loss_mask"))
        found[name] = {f"model.{key}": float(value) for key, value in metrics.items()}
    return found


def vacuous(finding, evidence: list) -> str | None:
    """Why `finding`'s criterion cannot fail (a trivial predictor meets it on an evidence run's task), or `None`.

    Args:
        finding: an outcome `Finding` that expects success.
        evidence: the `Setting`s its verdict rests on.
    """
    criterion = finding.criterion
    for setting in evidence:
        run = setting.runs[0]
        for name, scores in trivial_scores(run).items():
            if criterion["metric"] not in scores:
                continue
            stand_in = RunRecord(run.file, run.experiment, f"{name} predictor", _with(run.metrics, scores), run.model)
            value = criterion_value(criterion, Setting(setting.experiment, [stand_in]))
            if value is not None and meets(criterion, value):
                return (
                    f"finding {finding.id!r}: its criterion ({criterion_name(criterion)} {rule_text(criterion)}) "
                    f"is met by the {name} predictor ({value:.3g}) on {setting.where}'s task: it cannot fail"
                )
    return None


def _with(metrics: dict, scores: dict[str, float]) -> dict:
    """A copy of a run's metrics with its `test.model.*` numbers replaced by a trivial predictor's."""
    model = {key.split(".", 1)[1]: value for key, value in scores.items()}
    return {**metrics, "test": {**metrics["test"], "model": model}}
