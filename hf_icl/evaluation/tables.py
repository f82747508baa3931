"""One Markdown table for any evaluator's results: the model first, then each baseline, one column per metric."""

from __future__ import annotations


def metric_rows(results: dict, model_name: str = "model") -> list[tuple[str, dict]]:
    """(name, metrics) for the model and every baseline in an evaluator's `results`."""
    rows = [(model_name, results["model"])] if "model" in results else []
    return rows + list(results.get("baselines", {}).items())


def markdown_table(results: dict, model_name: str = "model", split: str = "test") -> list[str]:
    """Markdown lines of `| predictor | <split> metric ... |` for `results`."""
    rows = metric_rows(results, model_name)
    columns = list(dict.fromkeys(key for _, metrics in rows for key in metrics))
    lines = [
        "| predictor | " + " | ".join(f"{split} {c}" for c in columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for name, metrics in rows:
        cells = [f"{metrics[c]:.4f}" if c in metrics else "–" for c in columns]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines
