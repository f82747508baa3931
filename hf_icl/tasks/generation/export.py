"""Export the copying and retrieval tasks (P4 §3–4, P1 §3.3, zoology MQAR; DESIGN §4, §5.6) to a Hub-layout folder.

    python -m hf_icl.export copying --output data/copying [--configs copy lookup_suffix mqar ...] \\
        [--n-train N --seed S ...] [--cache-dir DIR] [--push-to-hub ORG/copying]

One Hub config per task: ``copy``, ``copy_dup_ngram``, ``lookup_suffix``, ``lookup_prefix``, ``phonebook``,
``associative_recall``, ``mqar``. Writes ``<output>/<config>/<split>-00000-of-00001.parquet`` and
``<output>/README.md`` (YAML ``configs:`` plus the card) through :mod:`hf_icl.hub.dataset_export`; then
``datasets.load_dataset("<output>", "<config>")`` works offline. An override applies to every config that has
the field (``--n-train`` to all; ``--n-per-length`` to the copy, lookup and phone-book tasks; ...).
"""

from __future__ import annotations

import numpy as np

from ...hub.dataset_export import DatasetExport, overrides_note
from . import copying, phonebook, recall
from .copying import CITATION as P4_CITATION
from .recall import ZOOLOGY_CITATION

_ENTRIES = {**copying.ENTRIES, **phonebook.ENTRIES, **recall.ENTRIES}
EXPORT_CONFIGS: tuple[str, ...] = tuple(_ENTRIES)
"""Hub config names (one per task)."""

_NON_INT_FIELDS = {"power_a", "random_non_queries"}
_INT_FIELDS = sorted({f for entry in _ENTRIES.values() for f in entry.option_fields} - _NON_INT_FIELDS)

_CARD = """# Copying and retrieval tasks

Synthetic copying and retrieval tasks judged by what a model *generates*: greedy decoding, string-level exact
match (the answer, then the EOS `.` where the task has one) and character accuracy, per length. From *Repeat After
Me: Transformers are Better than State Space Models at Copying* (Jelassi et al., ICML 2024; P4), the associative
recall of *In-Context Language Learning* (Akyürek et al., ICML 2024, §3.3) and zoology's multi-query associative
recall (Arora et al., 2023).

Generated with `hf_icl` (`python -m hf_icl.export copying`){overrides}.

## Tasks

- `copy`: `$ s | s .` with `s` uniform over a–z (`$` BOS, `|` separator, `.` EOS). Training rows pack whole
  examples into `context_len` characters; the example cut off at the end has no answer span (no loss).
- `copy_dup_ngram`: trained like `copy`; test strings have one n-gram copied over another place (n = 1..8), the
  two copies followed (and, where both are, preceded) by different letters.
- `lookup_suffix` `$ s | g ans .` and `lookup_prefix` `$ g | s | ans .`: the key `g` (an n-gram) occurs exactly
  once in `s`; `ans` is what follows it.
- `phonebook`: a book of `First Last: ddd-ddd-dddd` lines, a blank line, 2 lines repeated as shots, a blank line,
  then `First Last: ` of another entry; the answer is its number.
- `associative_recall`: `k1 v1 … kn vn > kq vq` over P1's vocabulary of 40 (keys `a`–`s`, values `A`–`S`),
  n = 191 pairs; the answer is the last symbol.
- `mqar`: zoology's generator; token `i` is the character `chr(0x4E00 + i)`. Each key is queried once at a gap
  drawn with p(g) ∝ g^(a−1); `answers[j]` is the value expected at `query_positions[j]`.

| config | settings |
|---|---|
{table}

## Statistics

| config | split | rows | scored answers | answer length | sequence length |
|---|---|---|---|---|---|
{stats}

## Fields

- span tasks: `text` (the sequence), `answer_starts` / `answer_ends` (each answer is
  `text[answer_starts[i]:answer_ends[i]]`, its prompt everything before it), `lengths` (string length or number
  of phone-book entries per answer), `ngrams` (copy tasks: duplicated n or key length).
- `mqar`: `text`, `query_positions`, `answers`.
- Tokenizers: `hf_icl.load_tokenizer("<config>")` (MQAR: `hf_icl.load_tokenizer("mqar", vocab_size=V)`); one
  character is one token.

## Citation

```bibtex
{citation}
```
"""


def split_statistics(rows) -> str:
    """Markdown cells ``rows | answers | answer length | sequence length`` for one split."""
    if not len(rows):
        return "0 | 0 | – | –"
    if "answers" in rows.column_names:  # mqar: one token per query
        count, answer_lengths = sum(len(a) for a in rows["answers"]), [1]
    else:
        starts, ends = rows["answer_starts"], rows["answer_ends"]
        answer_lengths = [e - s for row_s, row_e in zip(starts, ends) for s, e in zip(row_s, row_e)]
        count = len(answer_lengths)
    lengths = np.array([len(t) for t in rows["text"]])
    return (
        f"{len(rows)} | {count} | {min(answer_lengths)}–{max(answer_lengths)} | "
        f"{lengths.min()}–{lengths.max()} (mean {lengths.mean():.1f})"
    )


def _settings(name: str, config) -> str:
    return ", ".join(f"{field}={getattr(config, field)}" for field in _ENTRIES[name].option_fields)


def render_body(configs: dict, stats: dict, overrides: dict) -> str:
    """The card's prose (configs used, per-split statistics, overrides)."""
    return _CARD.format(
        overrides=overrides_note(overrides),
        table="\n".join(f"| {name} | {_settings(name, cfg)} |" for name, cfg in configs.items()),
        stats="\n".join(f"| {c} | {s} | {v} |" for (c, s), v in stats.items()),
        citation=P4_CITATION + "\n\n" + ZOOLOGY_CITATION,
    )


def make_builder(name: str, overrides: dict, cache_dir: str | None):
    """The task's builder with the overrides that task has."""
    entry = _ENTRIES[name]
    given = {key: value for key, value in overrides.items() if key in entry.option_fields}
    return entry.builder(config_name=entry.config_name, cache_dir=cache_dir, **given)


EXPORT = DatasetExport(
    name="copying",
    configs=EXPORT_CONFIGS,
    config_tasks={name: name for name in EXPORT_CONFIGS},
    make_builder=make_builder,
    statistics=split_statistics,
    render_body=render_body,
    card_metadata=dict(
        pretty_name="Copying and retrieval tasks (Repeat After Me, associative recall, MQAR)",
        license="apache-2.0",
        task_categories=["text-generation"],
        tags=["in-context-learning", "copying", "associative-recall", "length-generalization", "synthetic"],
    ),
    default_config="copy",
    overrides={**{field: int for field in _INT_FIELDS}, "power_a": float},
    description=__doc__,
)
