"""Model cards through `huggingface_hub`: :class:`~huggingface_hub.ModelCardData` metadata (tags, datasets,
metrics and `model-index` results with the baselines beside the model's numbers) above the Markdown body filled
from `model_cards/model_card.md`; :func:`project_url` is the link cards give for hf_icl."""

from __future__ import annotations

import json
import math
from pathlib import Path

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from ..evaluation.tables import markdown_table
from ..modeling.states import state_size_report
from .project import project_link, project_url

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


def _number(value) -> float | None:
    return (
        float(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        else None
    )


def eval_results(metrics: dict, task: str, dataset: str, dataset_config: str | None, split: str = "test") -> list:
    """The card's ``model-index`` results: one :class:`~huggingface_hub.EvalResult` per numeric metric of the model,
    its ``metric_args`` holding ``{"baselines": {name: value}}`` for every baseline scored on the same rows.

    Args:
        metrics: an evaluator's results (``{"model": {...}, "baselines": {...}, ...}``).
        task: the hf_icl task (the result's task name).
        dataset: the dataset id (``hf_icl/<export>``).
        dataset_config: the export config the rows come from (``None`` when the run used options no config names).
        split: the scored split.
    """
    baselines = metrics.get("baselines", {})
    url = project_url()  # huggingface_hub wants a source's URL with its name: none is given until the project has one
    source = {"source_name": "hf_icl evaluator", "source_url": url} if url else {}
    results = []
    for name, value in metrics.get("model", {}).items():
        if _number(value) is None:
            continue
        beside = {b: _number(row[name]) for b, row in baselines.items() if _number(row.get(name)) is not None}
        results.append(
            EvalResult(
                task_type="in-context-learning",
                task_name=task,
                dataset_type=dataset,
                dataset_name=f"hf_icl {task}",
                dataset_config=dataset_config,
                dataset_split=split,
                metric_type=name,
                metric_name=f"{split} {name}",
                metric_value=_number(value),
                metric_args={"baselines": beside} if beside else None,
                **source,
            )
        )
    return results


def model_card_data(model, metrics: dict, training_arguments: dict, family, dataset_config: str | None = None):
    """The card's metadata (:class:`~huggingface_hub.ModelCardData`)."""
    task = training_arguments["task"]
    architecture = training_arguments.get("architecture", model.config.model_type)
    dataset = f"hf_icl/{family.export.name if family.export is not None else task}"
    title = f"{model.config.model_type} ({model.config.preset or 'custom'}) on {task}"
    return ModelCardData(
        library_name="transformers",
        license="apache-2.0",
        tags=list(dict.fromkeys(["hf_icl", "in-context-learning", architecture, task])),
        datasets=[dataset],
        metrics=metric_names(metrics),
        pipeline_tag="text-generation" if family.head == "causal_lm" else None,
        model_name=title,
        eval_results=eval_results(metrics, task, dataset, dataset_config) or None,
    )


def render_model_card(
    model,
    metrics: dict,
    training_arguments: dict,
    family,
    repo_id: str | None = None,
    dataset_config: str | None = None,
) -> str:
    """Render the card of a trained checkpoint (``README.md``), through :class:`~huggingface_hub.ModelCard`.

    Args:
        model: the trained `PreTrainedModel` (its config gives architecture, preset and model type).
        metrics: an evaluator's test results (`{"model": {...}, "baselines": {...}, ...}`).
        training_arguments: the run's arguments (recorded verbatim).
        family: the task family (its metric note, head, example prompt and export).
        repo_id: Hub repo id used in the usage snippet (defaults to a local path placeholder).
        dataset_config: the export config of the training data, for ``model-index`` (``None``: not named).

    Returns:
        The card's text: YAML metadata (``model-index`` included), then the Markdown body.
    """
    template = (TEMPLATE_DIR / "model_card.md").read_text()
    table = "\n".join(markdown_table(metrics, model_name="this model"))
    task = training_arguments["task"]
    config = model.config
    repo_id = repo_id or "path/to/checkpoint"
    body = template.format(
        title=f"{config.model_type} ({config.preset or 'custom'}) on {task}",
        model_type=config.model_type,
        architecture=training_arguments.get("architecture", config.model_type),
        preset=config.preset or "custom",
        num_parameters=model.num_parameters(),
        hf_icl_link=project_link(),
        state_size=describe_state_size(state_size_report(model)),
        task=task,
        task_config=f"N={training_arguments.get('n_train')}, seed={training_arguments.get('task_seed')}",
        metrics_table=table,
        metric_notes=family.metric_note,
        training_arguments=json.dumps(training_arguments, indent=2, sort_keys=True, default=str),
        usage=USAGE[family.head].format(repo_id=repo_id, example_prompt=family.example_prompt),
    )
    data = model_card_data(model, metrics, training_arguments, family, dataset_config)
    return str(ModelCard(f"---\n{data.to_yaml()}\n---\n\n{body}"))
