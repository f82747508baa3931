"""Training objectives a task family can declare: ``objective(model, batch) -> ObjectiveResult``.

The objective runs the model on a batch and returns the task loss plus the auxiliary losses the model reported
(``outputs.aux_losses``); the trainer adds those with their weights and logs each one.

Batches:
- causal-LM families: ``input_ids`` (B, T), ``labels`` (B, T) with −100 where there is no loss, optional
  ``attention_mask``;
- regression families: ``inputs`` (B, T, d_in) float, ``targets`` (B, T, d_out), optional ``target_mask`` (B, T)
  (1 where a target is scored) and ``attention_mask``.
"""

from __future__ import annotations

import dataclasses

import torch
from torch.nn import functional as F


@dataclasses.dataclass
class ObjectiveResult:
    """The task loss of one batch and the model's named auxiliary losses (unweighted scalars)."""

    loss: torch.Tensor
    aux_losses: dict[str, torch.Tensor] = dataclasses.field(default_factory=dict)


def _aux(outputs) -> dict[str, torch.Tensor]:
    return dict(getattr(outputs, "aux_losses", None) or {})


def token_cross_entropy(model, batch: dict) -> ObjectiveResult:
    """Next-token cross-entropy over the labelled positions (the model's own `loss_function`)."""
    outputs = model(**batch)
    return ObjectiveResult(outputs.loss, _aux(outputs))


def _scored(model, batch: dict):
    """Predictions, targets and the (B, T, 1) float mask of scored positions."""
    outputs = model(inputs=batch["inputs"], attention_mask=batch.get("attention_mask"))
    predictions, targets = outputs.predictions, batch["targets"].to(outputs.predictions.dtype)  # (B, T, d_out)
    mask = batch.get("target_mask")
    mask = torch.ones(targets.shape[:2], device=targets.device) if mask is None else mask
    return outputs, predictions, targets, mask.to(predictions.dtype)[..., None]  # mask (B, T, 1)


def _masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (values * mask).sum() / (mask.sum() * values.shape[-1]).clamp(min=1)


def mean_squared_error(model, batch: dict) -> ObjectiveResult:
    """Mean of (prediction − target)² over scored positions and output dimensions."""
    outputs, predictions, targets, mask = _scored(model, batch)
    return ObjectiveResult(_masked_mean((predictions - targets) ** 2, mask), _aux(outputs))


def binary_cross_entropy(model, batch: dict) -> ObjectiveResult:
    """Binary cross-entropy of the predictions as logits against 0/1 targets, over scored positions."""
    outputs, predictions, targets, mask = _scored(model, batch)
    losses = F.binary_cross_entropy_with_logits(predictions, targets, reduction="none")
    return ObjectiveResult(_masked_mean(losses, mask), _aux(outputs))
