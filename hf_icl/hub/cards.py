"""Fill the Markdown model card template (`model_cards/model_card.md`) for a saved checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

from ..evaluation.tables import markdown_table
from ..modeling.states import state_size_report

TEMPLATE_DIR = Path(__file__).parent / "model_cards"
USAGE = {
    "causal_lm": """```python
from transformers import AutoModelForCausalLM, AutoTokenizer, pipeline

model = AutoModelForCausalLM.from_pretrained("{repo_id}", trust_remote_code=True)
tokenizer = AutoTokenizer.from_pretrained("{repo_id}", trust_remote_code=True)  # the config carries auto_map
generator = pipeline("text-generation", model=model, tokenizer=tokenizer)
print(generator("{example_prompt}", max_new_tokens=20, do_sample=True)[0]["generated_text"])
```""",
    "regression": """```python
import torch
from transformers import AutoModel

# the config's auto_map exports the regression model under AutoModel; with hf_icl installed,
# hf_icl.AutoModelForInContextRegression.from_pretrained("{repo_id}") loads the same model
model = AutoModel.from_pretrained("{repo_id}", trust_remote_code=True)
xs = torch.randn(1, 10, model.config.input_dim)  # (B, N, input_dim): N in-context examples
ys = torch.randn(1, 10)  # (B, N) (or (B, N, output_dim)); prediction i sees x_1, y_1, ..., x_i only
print(model(xs=xs, ys=ys).predictions.shape)  # (B, N)
# a ready continuous sequence instead of (x, y) pairs: model(inputs=torch.randn(1, 10, model.config.input_dim))
```""",
}
"""Usage snippet per model head (see `hf_icl.architectures.heads`)."""


def metric_names(metrics: dict) -> list[str]:
    """Metric names for the card's YAML front matter, in table order."""
    rows = [metrics.get("model", {}), *metrics.get("baselines", {}).values()]
    return list(dict.fromkeys(key for row in rows for key in row))


def describe_state_size(report: dict) -> str:
    """One phrase for the card: the fixed recurrent state, or the growing cache at the measured length."""
    size = f"{report['bytes_per_sequence']:,} bytes"
    if report["fixed"]:
        return f"{size} (a fixed-size recurrent state, the same at any length)"
    return f"{size} at {report['length']} tokens (the cache grows with the sequence: attention's keys and values)"


def render_model_card(model, metrics: dict, training_arguments: dict, family, repo_id: str | None = None) -> str:
    """Render the card of a trained checkpoint.

    Args:
        model: the trained `PreTrainedModel` (its config gives architecture, preset and model type).
        metrics: an evaluator's test results (`{"model": {...}, "baselines": {...}, ...}`).
        training_arguments: the run's arguments (recorded verbatim).
        family: the task family (its metric note, head and example prompt).
        repo_id: Hub repo id used in the usage snippet (defaults to a local path placeholder).
    """
    template = (TEMPLATE_DIR / "model_card.md").read_text()
    table = "\n".join(markdown_table(metrics, model_name="this model"))
    task = training_arguments["task"]
    config = model.config
    repo_id = repo_id or "path/to/checkpoint"
    return template.format(
        title=f"{config.model_type} ({config.preset or 'custom'}) on {task}",
        model_type=config.model_type,
        architecture=training_arguments.get("architecture", config.model_type),
        preset=config.preset or "custom",
        num_parameters=model.num_parameters(),
        state_size=describe_state_size(state_size_report(model)),
        task=task,
        dataset=f"hf_icl/{task}",
        task_config=f"N={training_arguments.get('n_train')}, seed={training_arguments.get('task_seed')}",
        metrics_table=table,
        metric_names="\n".join(f"- {name}" for name in metric_names(metrics)),
        metric_notes=family.metric_note,
        training_arguments=json.dumps(training_arguments, indent=2, sort_keys=True, default=str),
        usage=USAGE[family.head].format(repo_id=repo_id, example_prompt=family.example_prompt),
    )
