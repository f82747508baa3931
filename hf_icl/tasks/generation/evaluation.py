"""Generation evaluation of the copying and retrieval tasks (P4 §3–4; DESIGN §2.3, §5.6).

A model is scored on what it *generates*: greedy decoding through ``pipeline("text-generation")`` (the path a user
takes) in left-padded batches. A query (:class:`.generative.Query`) is correct when the continuation is
exactly its answer, followed by the EOS where the task has one (generation must stop); character accuracy is the
share of answer positions generated right. Both are reported per group (string length, phone-book size or
duplicated n).

The reference evaluation of P4's code is one teacher-forced forward pass over ``prompt + answer (+ EOS)`` with the
argmax read at the answer positions (:func:`teacher_forced_continuations`). Greedy decoding from a correct prefix
picks exactly those argmaxes, so the two string accuracies agree query by query; both are recorded.

Reference algorithms (:mod:`hf_icl.baselines.copying`: the lookup oracle with each task's declared solver and, on
copy tasks, the n-gram copiers of P4 Algorithm 1) return continuations too and are scored by the same function.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch

from ...baselines.copying import LookupOracle
from ..family import task_entry
from .generative import EOS, Query


def _cut_at_eos(text: str) -> str:
    """A continuation up to and including its first EOS (a finished row of a batch is padded after it)."""
    return text[: text.index(EOS) + 1] if EOS in text else text


def pipeline_continuations(model, tokenizer, queries: list[Query], batch_size: int = 64) -> list[str]:
    """Greedy continuations from ``pipeline("text-generation")``, ``len(answer) (+ 1 for the EOS)`` tokens at most.

    Queries are run in batches of equal token budget, sorted by prompt length (less left padding).

    Args:
        model: a causal LM.
        tokenizer: its tokenizer (copied: the pipeline switches padding to the left).
        queries: what to continue.
        batch_size: prompts per generation batch.

    Returns:
        One decoded continuation per query (special tokens kept, cut after the first EOS).
    """
    # imported here: the pipeline module loads transformers' processors (seconds), which data-only processes never use
    from transformers import pipeline

    generator = pipeline("text-generation", model=model, tokenizer=copy.deepcopy(tokenizer))
    order = sorted(range(len(queries)), key=lambda i: (len(queries[i].answer) + queries[i].eos, len(queries[i].prompt)))
    budgets = defaultdict(list)
    for i in order:
        budgets[len(queries[i].answer) + queries[i].eos].append(i)
    out = [""] * len(queries)
    was_training = model.training
    model.eval()
    for budget, indices in budgets.items():
        generated = generator(
            [queries[i].prompt for i in indices],
            max_new_tokens=budget,
            do_sample=False,
            num_beams=1,
            batch_size=batch_size,
            return_full_text=False,
            skip_special_tokens=False,
            clean_up_tokenization_spaces=False,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
        for i, result in zip(indices, generated):
            out[i] = _cut_at_eos(result[0]["generated_text"])
    model.train(was_training)
    return out


@torch.no_grad()
def teacher_forced_continuations(model, tokenizer, queries: list[Query], batch_size: int = 64) -> list[str]:
    """The reference pass: argmax at every answer position of ``prompt + answer (+ EOS)``, one forward per batch.

    Sequences are right-padded without a mask: every model is causal, so padding never reaches a scored position.

    Args:
        model: a causal LM.
        tokenizer: its character-level tokenizer (one character = one token).
        queries: what to score.
        batch_size: sequences per forward pass.

    Returns:
        The argmax characters at the answer (and EOS) positions of every query.
    """
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    order = sorted(range(len(queries)), key=lambda i: len(queries[i].prompt) + len(queries[i].answer))
    out = [""] * len(queries)
    for start in range(0, len(order), batch_size):
        chunk = [queries[i] for i in order[start : start + batch_size]]
        ids = tokenizer([q.prompt + q.answer + (EOS if q.eos else "") for q in chunk])["input_ids"]
        batch = torch.full((len(ids), max(map(len, ids))), tokenizer.pad_token_id, dtype=torch.long)  # (B, T)
        for row, seq in enumerate(ids):
            batch[row, : len(seq)] = torch.tensor(seq)
        argmax = model(input_ids=batch.to(device)).logits.argmax(-1).cpu()  # (B, T)
        for row, (i, q) in enumerate(zip(order[start : start + batch_size], chunk)):
            first = len(q.prompt) - 1  # logits at position t predict token t + 1
            predicted = argmax[row, first : first + len(q.answer) + q.eos].tolist()
            out[i] = "".join(tokenizer.convert_ids_to_tokens(predicted))
    model.train(was_training)
    return out


def score(queries: list[Query], continuations: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """String-level exact match and character accuracy of each continuation.

    Args:
        queries: the queries.
        continuations: one generated (or teacher-forced) continuation per query.

    Returns:
        ``(exact, chars)``: ``exact[i]`` is 1.0 iff continuation ``i`` starts with the answer followed by the EOS
        (tasks with one) and has nothing after it; ``chars[i]`` is the share of answer positions that match.
    """
    exact, chars = np.zeros(len(queries)), np.zeros(len(queries))
    for i, (q, text) in enumerate(zip(queries, continuations)):
        target = q.answer + (EOS if q.eos else "")
        exact[i] = float(_cut_at_eos(text) == target if q.eos else text[: len(target)] == target)
        chars[i] = sum(a == b for a, b in zip(q.answer, text)) / max(len(q.answer), 1)
    return exact, chars


def summarize(queries: list[Query], exact: np.ndarray, chars: np.ndarray, train_max: int | None) -> tuple:
    """Overall metrics plus per-group string and character accuracy.

    Returns:
        ``(summary, per_group_exact, per_group_chars)`` with group keys as strings (JSON), sorted by group.
    """
    groups = np.array([q.group for q in queries])
    keys = sorted(set(groups.tolist()))
    per_exact = {str(g): float(exact[groups == g].mean()) for g in keys}
    per_chars = {str(g): float(chars[groups == g].mean()) for g in keys}
    summary = {"string_accuracy": float(exact.mean()), "char_accuracy": float(chars.mean())}
    if train_max is not None:
        for name, mask in (("beyond_train", groups > train_max), ("in_train_range", groups <= train_max)):
            if mask.any() and not mask.all():
                summary[f"string_accuracy_{name}"] = float(exact[mask].mean())
    return summary, per_exact, per_chars


def baselines_for(task: str, config) -> dict:
    """Reference algorithms scored beside a model: the lookup oracle, plus n-gram copiers on copy tasks."""
    entry = task_entry(task)
    found = {"lookup oracle": LookupOracle(entry.solver, entry.spec.eos, getattr(config, "answer_length", 0))}
    return {**found, **entry.spec.extra_baselines(config)}


def evaluate_generation(task: str, model, tokenizer, rows, config, batch_size: int = 64, baselines: bool = True):
    """Scores a model (pipeline and teacher-forced) and the reference algorithms on a split's queries.

    Args:
        task: a task of the generation family.
        model: a causal LM, or ``None`` to score the baselines only.
        tokenizer: the model's tokenizer.
        rows: the split (every query of every row is scored).
        config: the task's builder config (training range, lookup answer length).
        batch_size: sequences per batch.
        baselines: also score :func:`baselines_for`.

    Returns:
        ``{"model": {...}, "per_<group>": {...}, "per_<group>_char": {...}, "teacher_forced": {...},
        "pipeline_matches_teacher_forced": bool, "baselines": {...}, "baseline_curves": {...}, "group_by",
        "train_max_<group>", "num_queries"}``.
    """
    spec = task_entry(task).spec
    queries = [q for row in rows for q in spec.queries(row)]
    train_max, group = spec.train_max_group(config), spec.group_by
    results = {"group_by": group, f"train_max_{group}": train_max, "num_queries": len(queries)}
    if model is not None:
        exact, chars = score(queries, pipeline_continuations(model, tokenizer, queries, batch_size))
        forced, forced_chars = score(queries, teacher_forced_continuations(model, tokenizer, queries, batch_size))
        results["model"], results[f"per_{group}"], results[f"per_{group}_char"] = summarize(
            queries, exact, chars, train_max
        )
        results["model"]["teacher_forced_string_accuracy"] = float(forced.mean())
        forced_summary, forced_curve, _ = summarize(queries, forced, forced_chars, None)
        results["teacher_forced"] = {"summary": forced_summary, f"per_{group}": forced_curve}
        results["pipeline_matches_teacher_forced"] = bool((exact == forced).all())
    if baselines:
        results["baselines"], results["baseline_curves"] = {}, {}
        for name, algorithm in baselines_for(task, config).items():
            budget = max((len(q.answer) + q.eos for q in queries), default=0)
            summary, curve, _ = summarize(
                queries, *score(queries, algorithm.generate([q.prompt for q in queries], budget)), train_max
            )
            results["baselines"][name], results["baseline_curves"][name] = summary, curve
    return results


def plot_generation_curves(results: dict, path: str | Path, title: str = "", extra_curves=None) -> None:
    """PNG of string accuracy per group: the model (and its character accuracy), baselines, the training range.

    Args:
        results: output of :func:`evaluate_generation` (its model and baseline curves are drawn).
        path: where the PNG goes.
        title: figure title.
        extra_curves: ``{name: {group: accuracy}}`` drawn as solid lines too (e.g. other runs).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    group = results["group_by"]
    curves = [(name, curve, "-") for name, curve in (extra_curves or {}).items()]
    if f"per_{group}" in results:
        curves += [("model", results[f"per_{group}"], "-"), ("model (characters)", results[f"per_{group}_char"], "--")]
    curves += [(name, curve, ":") for name, curve in results.get("baseline_curves", {}).items()]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for name, curve, style in curves:
        xs = sorted(int(g) for g in curve)
        ax.plot(xs, [curve[str(g)] for g in xs], style, marker=".", lw=1.5 if style == "-" else 1, label=name)
    if results.get(f"train_max_{group}") is not None:
        ax.axvline(results[f"train_max_{group}"], color="tab:red", ls="--", lw=1, label=f"longest training {group}")
    ax.set(xlabel=group, ylabel="string accuracy (greedy generation)", ylim=(-0.02, 1.02), title=title)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def length_table(runs: list[tuple[str, dict]], baselines: tuple[str, ...] = ()) -> list[str]:
    """Markdown lines: string accuracy per test group for several runs (and baselines of the first run).

    Args:
        runs: ``(name, metrics.json contents)`` of runs on the same task.
        baselines: names of baselines (from the first run's results) to add as rows.
    """
    first = runs[0][1]["test"]
    group = first["group_by"]
    keys = sorted(first[f"per_{group}"], key=int)
    lines = [
        f"| run | parameters | steps | train time (s) | {' | '.join(keys)} |",
        "|---|---|---|---|" + "---|" * len(keys),
    ]
    for name, metrics in runs:
        curve = metrics["test"][f"per_{group}"]
        cells = " | ".join(f"{curve[k]:.2f}" if k in curve else "–" for k in keys)
        train = metrics["train"]
        lines.append(
            f"| {name} | {metrics['num_parameters']:,} | {train['steps']} | {train['wall_time_s']:.0f} | {cells} |"
        )
    for name in baselines:
        curve = first["baseline_curves"][name]
        lines.append(f"| {name} | – | – | – | " + " | ".join(f"{curve[k]:.2f}" for k in keys) + " |")
    return lines


def main(argv=None) -> None:
    """``python -m hf_icl.tasks.generation.evaluation RUN/metrics.json ... [--plot PNG]``: runs' table (and
    curves)."""
    import argparse
    import json

    parser = argparse.ArgumentParser(prog="python -m hf_icl.tasks.generation.evaluation", description=main.__doc__)
    parser.add_argument("metrics", nargs="+", type=Path, help="metrics.json of runs on the same generation task")
    parser.add_argument("--plot", type=Path, help="write every run's string-accuracy curve here")
    parser.add_argument("--baselines", default="lookup oracle,3-gram copier,5-gram copier", help="comma-separated")
    args = parser.parse_args(argv)
    runs = [(path.parent.name, json.loads(path.read_text())) for path in args.metrics]
    baselines = tuple(b for b in args.baselines.split(",") if b in runs[0][1]["test"].get("baseline_curves", {}))
    print("\n".join(length_table(runs, baselines)))
    if args.plot:
        first = runs[0][1]["test"]
        group = first["group_by"]
        shown = {key: value for key, value in first.items() if key not in (f"per_{group}", "baseline_curves")}
        shown["baseline_curves"] = {b: first["baseline_curves"][b] for b in baselines}
        runs_curves = {name: m["test"][f"per_{group}"] for name, m in runs}
        plot_generation_curves(shown, args.plot, f"{runs[0][1]['task']}: string accuracy by {group}", runs_curves)


if __name__ == "__main__":
    main()
