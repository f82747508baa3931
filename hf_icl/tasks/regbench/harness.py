"""RegBench in lm-evaluation-harness (``hf_icl_regbench``): accuracy and TVD against each row's exact automaton,
from lm-eval's log-likelihood of every symbol after every prefix.

A RegBench row holds one scored position per character of ``text[:-1]`` (DESIGN §5.2), so the task's documents are
positions: :func:`harness_positions` (``process_docs``) turns each row into ``len(text) - 1`` documents
``{prefix, truth, ...}``. Each is a ``multiple_choice`` over the 20 symbols of :data:`REGBENCH_SYMBOLS` with an empty
target delimiter, so lm-eval asks for ``log p(symbol | prefix)`` of each symbol (one forward pass per position: the
20 requests share their context) and :func:`harness_score` (``process_results``) scores the position:

- accuracy: 1 when the model's greedy next token (over its whole vocabulary: lm-eval's ``is_greedy``) is a symbol
  the automaton allows;
- TVD: ½ (Σ_s |p(s) − q(s)| + (1 − Σ_s p(s))), the total variation against the truth q over the model's whole
  vocabulary (mass on tokens outside the alphabet counts in full).

Averaged over documents, both are the micro-averages of :func:`~hf_icl.tasks.regbench.metrics.regbench_metrics`
over the same positions, so the numbers equal hf_icl's evaluator for any model whose tokenizer gives every symbol
one token after any prefix (hf_icl checkpoints, character-level tokenizers). ``--limit N`` counts positions: the
first rows of the test split, position by position.
"""

from __future__ import annotations

import numpy as np

from ...harness.spec import HarnessTask, function_ref
from .export import CONFIGS
from .regbench import next_token_truth
from .tokenizer import REGBENCH_SYMBOLS


def harness_positions(dataset):
    """lm-eval's ``process_docs``: one document per scored position of every row.

    Args:
        dataset: a RegBench split (``datasets.Dataset``).

    Returns:
        A ``datasets.Dataset`` with ``row``, ``position``, ``prefix`` (``text[: position + 1]``), ``next`` (the symbol
        that follows), ``target`` (its index in :data:`REGBENCH_SYMBOLS`) and ``truth`` (the exact next-symbol
        distribution, 20 floats in that order).
    """
    index = {symbol: i for i, symbol in enumerate(REGBENCH_SYMBOLS)}

    def expand(batch, indices):
        out = {"row": [], "position": [], "prefix": [], "next": [], "target": [], "truth": []}
        for k, row_index in enumerate(indices):
            row = {key: values[k] for key, values in batch.items()}
            text, truth = row["text"], next_token_truth(row)  # (T - 1, 20)
            for position in range(len(text) - 1):
                out["row"].append(row_index)
                out["position"].append(position)
                out["prefix"].append(text[: position + 1])
                out["next"].append(text[position + 1])
                out["target"].append(index[text[position + 1]])
                out["truth"].append(truth[position].tolist())
        return out

    return dataset.map(expand, batched=True, with_indices=True, remove_columns=dataset.column_names)


def harness_score(doc: dict, results: list) -> dict[str, float]:
    """lm-eval's ``process_results`` for one position.

    Args:
        doc: a document of :func:`harness_positions`.
        results: lm-eval's ``(log-likelihood, is_greedy)`` of each symbol of :data:`REGBENCH_SYMBOLS`, in order.

    Returns:
        ``{"accuracy": 0 or 1, "tvd": float}``.
    """
    truth = np.asarray(doc["truth"], dtype=np.float64)  # (20,)
    probs = np.exp(np.array([loglik for loglik, _ in results], dtype=np.float64))  # (20,)
    greedy = np.array([bool(is_greedy) for _, is_greedy in results])
    outside = max(0.0, 1.0 - float(probs.sum()))  # mass the model puts on tokens outside the alphabet
    return {
        "accuracy": float(bool((greedy & (truth > 0)).any())),
        "tvd": float(0.5 * (np.abs(probs - truth).sum() + outside)),
    }


def yaml_fields(split) -> dict:
    """The task's YAML fields (the split does not change them)."""
    return {
        "output_type": "multiple_choice",
        "process_docs": function_ref("regbench_positions"),
        "doc_to_text": "prefix",
        "doc_to_target": "target",
        "doc_to_choice": list(REGBENCH_SYMBOLS),
        "target_delimiter": "",
        "process_results": function_ref("regbench_score"),
        "metric_list": [
            {"metric": "accuracy", "aggregation": "mean", "higher_is_better": True},
            {"metric": "tvd", "aggregation": "mean", "higher_is_better": False},
        ],
    }


HARNESS_TASKS = (
    HarnessTask(
        name="hf_icl_regbench",
        configs=("n2500", *(name for name in CONFIGS if name != "n2500")),
        fields=yaml_fields,
        functions={"regbench_positions": harness_positions, "regbench_score": harness_score},
        description="RegBench (P1): next-symbol accuracy and TVD against the exact automaton, one document per "
        "position (lm-eval log-likelihoods of the 20 symbols)",
    ),
)
"""The family's lm-eval tasks (found by :mod:`hf_icl.harness.tasks`)."""
