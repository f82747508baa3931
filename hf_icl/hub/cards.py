"""Fill the Markdown model card template (`model_cards/model_card.md`) for a saved checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

from ..evaluation.tables import markdown_table

TEMPLATE_DIR = Path(__file__).parent / "model_cards"
METRIC_NOTES = {
    "regbench": "Accuracy: share of positions whose argmax continuation is allowed by the true automaton. TVD: "
    "total variation distance between the predicted and the true next-token distribution, averaged over positions.",
    "length_generalization": "Accuracy of the answer read at the query position, averaged over the test lengths "
    "(all longer than any training input); `accuracy_in_train_range` averages the training lengths.",
}


def metric_names(metrics: dict) -> list[str]:
    """Metric names for the card's YAML front matter, in table order."""
    rows = [metrics.get("model", {}), *metrics.get("baselines", {}).values()]
    return list(dict.fromkeys(key for row in rows for key in row))


def render_model_card(
    model, metrics: dict, training_arguments: dict, repo_id: str | None = None, example_prompt: str = "abc|"
) -> str:
    """Render the card of a trained checkpoint.

    Args:
        model: the trained `PreTrainedModel` (its config gives architecture, preset and model type).
        metrics: an evaluator's test results (`{"model": {...}, "baselines": {...}, ...}`).
        training_arguments: the run's arguments (recorded verbatim).
        repo_id: Hub repo id used in the usage snippet (defaults to a local path placeholder).
        example_prompt: a prompt for the usage snippet.
    """
    template = (TEMPLATE_DIR / "model_card.md").read_text()
    table = "\n".join(markdown_table(metrics, model_name="this model"))
    task = training_arguments.get("task", "regbench")
    config = model.config
    return template.format(
        title=f"{config.model_type} ({config.preset or 'custom'}) on {task}",
        model_type=config.model_type,
        architecture=training_arguments.get("architecture", config.model_type),
        preset=config.preset or "custom",
        num_parameters=model.num_parameters(),
        task=task,
        dataset=f"hf_icl/{task}",
        task_config=f"N={training_arguments.get('n_train')}, seed={training_arguments.get('task_seed')}",
        metrics_table=table,
        metric_names="\n".join(f"- {name}" for name in metric_names(metrics)),
        metric_notes=METRIC_NOTES.get(task, METRIC_NOTES["length_generalization"] if "per_length" in metrics else ""),
        training_arguments=json.dumps(training_arguments, indent=2, sort_keys=True, default=str),
        repo_id=repo_id or "path/to/checkpoint",
        example_prompt=example_prompt,
    )
