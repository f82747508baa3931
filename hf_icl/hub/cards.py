"""Fill the Markdown model card template (`model_cards/model_card.md`) for a saved checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

TEMPLATE_DIR = Path(__file__).parent / "model_cards"


def render_model_card(
    model, metrics: dict, training_arguments: dict, repo_id: str | None = None, example_prompt: str = "abc|"
) -> str:
    """Render the card of a trained checkpoint.

    Args:
        model: the trained `PreTrainedModel` (its config gives architecture, preset and model type).
        metrics: `{"model": {...}, "baselines": {...}}` test metrics.
        training_arguments: the run's arguments (recorded verbatim).
        repo_id: Hub repo id used in the usage snippet (defaults to a local path placeholder).
        example_prompt: a prompt for the usage snippet.
    """
    template = (TEMPLATE_DIR / "model_card.md").read_text()
    rows = []
    if "model" in metrics:
        rows.append(("this model", metrics["model"]))
    rows += list(metrics.get("baselines", {}).items())
    table = "\n".join(f"| {name} | {m['accuracy']:.4f} | {m['tvd']:.4f} |" for name, m in rows)
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
        training_arguments=json.dumps(training_arguments, indent=2, sort_keys=True, default=str),
        repo_id=repo_id or "path/to/checkpoint",
        example_prompt=example_prompt,
    )
