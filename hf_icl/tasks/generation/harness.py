"""The copying and retrieval tasks in lm-evaluation-harness (``hf_icl_copy``, ``hf_icl_mqar``, ``hf_icl_lookup``,
...): string exact match of what the model *generates* (``generate_until``, greedy), as hf_icl's evaluator scores it.

Documents are queries: :func:`harness_queries` (``process_docs``) turns every row into its
:class:`~.generative.Query` list (the prompt, the answer, whether the answer must end with the EOS ``.``), the
same queries :func:`~.evaluation.evaluate_generation` scores. lm-eval generates greedily from each prompt until the
EOS (or any other special token of the task's tokenizer: none can be part of an answer) for at most the longest
answer plus one token, decodes without special tokens and cuts the text at the first stop string;
:func:`harness_exact_match` then checks it.

Equal to hf_icl's string accuracy query by query, with one exception that lm-eval's decoding causes: an answer
followed directly by the task's BOS or padding token instead of its EOS (hf_icl: wrong, the answer did not stop;
lm-eval: decoded without special tokens, the text stops where it should). Models trained on the task do not emit
those tokens.
"""

from __future__ import annotations

from functools import partial

from ...harness.spec import HarnessGroup, HarnessTask, function_ref
from ..loading import task_config
from .generative import EOS
from .spec import TASKS


def harness_queries(task: str, dataset):
    """lm-eval's ``process_docs`` of a generation task (bound to its task in the written utils file): one document
    per query of every row.

    Args:
        task: the generation task whose export config `dataset` comes from.
        dataset: a split of that config (``datasets.Dataset``).

    Returns:
        A ``datasets.Dataset`` with ``row``, ``prompt``, ``answer``, ``eos`` (the answer must end with ``.``) and
        ``group`` (its length, duplicated n or number of entries).
    """
    spec = TASKS[task].spec

    def expand(batch, indices):
        out = {"row": [], "prompt": [], "answer": [], "eos": [], "group": []}
        for k, row_index in enumerate(indices):
            for query in spec.queries({key: values[k] for key, values in batch.items()}):
                out["row"].append(row_index)
                out["prompt"].append(query.prompt)
                out["answer"].append(query.answer)
                out["eos"].append(query.eos)
                out["group"].append(query.group)
        return out

    return dataset.map(expand, batched=True, with_indices=True, remove_columns=dataset.column_names)


def harness_exact_match(doc: dict, results: list[str]) -> dict[str, float]:
    """lm-eval's ``process_results``: 1 when the generated text is the answer (and stopped there, for tasks whose
    answers end with the EOS).

    Args:
        doc: a document of :func:`harness_queries`.
        results: lm-eval's one generated string, already cut at the first stop string.
    """
    text, answer = results[0], doc["answer"]
    correct = text == answer if doc["eos"] else text[: len(answer)] == answer
    return {"exact_match": float(correct)}


def stop_strings(task: str) -> list[str]:
    """The EOS first, then the task tokenizer's other special tokens (no answer contains one)."""
    tokenizer = TASKS[task].spec.tokenizer(task_config(task))
    specials = [token for token in tokenizer.all_special_tokens if len(token) == 1]
    return [EOS, *sorted(set(specials) - {EOS})]


def yaml_fields_for(task: str):
    """The YAML fields of `task`'s lm-eval task: its generation budget is the longest answer of the split plus one
    token (so an answer and its EOS always fit)."""

    def fields(split) -> dict:
        queries = [q for row in split for q in TASKS[task].spec.queries(dict(row))]
        budget = max((len(q.answer) + 1 for q in queries), default=1)
        return {
            "output_type": "generate_until",
            "process_docs": function_ref(f"{task}_queries"),
            "doc_to_text": "prompt",
            "doc_to_target": "answer",
            "target_delimiter": "",
            "generation_kwargs": {"until": stop_strings(task), "max_gen_toks": budget, "do_sample": False},
            "process_results": function_ref("generation_exact_match"),
            "metric_list": [{"metric": "exact_match", "aggregation": "mean", "higher_is_better": True}],
        }

    return fields


DESCRIPTIONS = {
    "copy": "copying (P4): exact match of the generated copy",
    "copy_dup_ngram": "copying strings with a duplicated n-gram (P4 §3.4): exact match",
    "lookup_prefix": "prefix-key lookup (P4 §3.5): exact match",
    "lookup_suffix": "suffix-key lookup (P4 §3.5): exact match",
    "phonebook": "phone-book lookup (P4 §4.3): exact match of the number",
    "associative_recall": "associative recall (P1 §3.3): exact match of the value",
    "mqar": "multi-query associative recall (zoology): exact match of every queried value",
}

HARNESS_TASKS = tuple(
    HarnessTask(
        f"hf_icl_{task}",
        (task,),
        yaml_fields_for(task),
        {f"{task}_queries": partial(harness_queries, task), "generation_exact_match": harness_exact_match},
        DESCRIPTIONS[task],
    )
    for task in TASKS
)
"""One lm-eval task per generation task, over the export config of the same name."""

HARNESS_GROUPS = (
    HarnessGroup(
        "hf_icl_lookup",
        ("hf_icl_lookup_prefix", "hf_icl_lookup_suffix"),
        ("exact_match",),
        "both P4 lookups (their queries' mean)",
    ),
)
"""``hf_icl_lookup`` runs both lookups."""
