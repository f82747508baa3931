"""Export the regular-language suite (P2 §5.1, Table 1, §5.3; DESIGN §5.4) to a Hub-layout folder; optionally push.

    python -m hf_icl.export formal_languages --output data/formal_languages [--configs parity_check dyck_2 ...] \\
        [--n-train N --n-validation N --n-per-length N --seed S] [--train-max-length L ...] \\
        [--cache-dir DIR] [--push-to-hub ORG/formal_languages]

One Hub config per task, plus ``parity_p10 … parity_p90`` (the ``parity_p`` task at P(1) = 0.1 … 0.9, P2 §5.3).
Writes ``<output>/<config>/<split>-00000-of-00001.parquet`` and ``<output>/README.md`` (YAML ``configs:`` plus the
card) through :mod:`hf_icl.hub.dataset_export`; then ``datasets.load_dataset("<output>", "<config>")`` works offline.
"""

from __future__ import annotations

import numpy as np

from ...hub.dataset_export import DatasetExport, overrides_note
from .languages import RECOGNITION_LANGUAGES
from .regular_languages import CITATION, CONFIG_FIELDS, LANGUAGES, RegularLanguageBuilder

EXPORT_CONFIGS: dict[str, tuple[str, dict]] = {
    **{language: (language, {}) for language in LANGUAGES if language != "parity_p"},
    **{f"parity_p{p}": ("parity_p", {"p_one": p / 100}) for p in (10, 30, 50, 70, 90)},
}
"""Hub config name -> (builder config name, fixed overrides)."""

_CARD = """# Regular-language suite (RegularGPT §5.1)

The regular languages of *Transformer Working Memory Enables Regular Language Reasoning and Natural Language
Length Extrapolation* (Chi et al., Findings of EMNLP 2023; P2 Table 1 and §5.3). Each row is one string and one
answer. A causal LM reads `input + "?" + answer`; the loss is on the answer only, and accuracy is the argmax at the
`?` position (per-sequence accuracy, grouped by `length`).

Generated with `hf_icl` (`python -m hf_icl.export formal_languages`), builder version {version}{overrides}.

## Tasks

- **Transduction** (Delétang et al. semantics; symbols i.i.d. uniform): `even_pairs` (1 iff first ≠ last, i.e. an
  odd number of 01/10 transitions), `parity_check` (#1 mod 2), `cycle_navigation` (0/1/2 move −1/0/+1 on a
  5-cycle from 0; answer = position), `modular_arithmetic` (digits 0–4 alternating with `+ - *`, `*` binding
  tighter, `+`/`-` left-associative; answer = value mod 5; odd lengths only), `parity_p*` (parity with
  P(1) = 0.1 … 0.9).
- **Balanced recognition** (as RegularGPT evaluates the Bhattamishra et al. languages): half members (answer `1`),
  half non-members (`0`), each drawn *uniformly* among the strings of its exact length by counting DFA paths.
  `dyck_n`: balanced strings over `0` = open, `1` = close with depth ≤ n. `tomita_3`: no odd run of 1s immediately
  followed by an odd run of 0s; `tomita_4`: no `000`; `tomita_5`: even #0 and even #1; `tomita_6`: #0 − #1 ≡ 0
  (mod 3). Lengths without both classes are skipped: odd lengths (Dyck, Tomita 5), 1 (Tomita 3, 6), 1–2 (Tomita 4).

Train and validation lengths are uniform over the valid train lengths; the test split has `n_per_length` rows for
every valid test length (balanced per length for recognition).

| config | kind | train lengths | test lengths | train | validation | per test length | seed |
|---|---|---|---|---|---|---|---|
{table}

## Statistics

| config | split | rows | lengths (distinct) | answer shares |
|---|---|---|---|---|
{stats}

## Fields

- `input`: the string (`0`–`4`, `+`, `-`, `*`); `answer`: one character; `length`: `len(input)`.
- Tokenizer: `hf_icl.load_tokenizer("parity_check")` (any task of the suite), ids `['.', '0', '1', '2', '3', '4',
  '+', '-', '*', '?']` (`.` = pad/eos).

## Citation

```bibtex
{citation}
```
"""


def _table_row(name: str, config) -> str:
    kind = "recognition" if config.language in RECOGNITION_LANGUAGES else "transduction"
    if config.p_one is not None:
        kind += f", P(1) = {config.p_one}"
    return (
        f"| {name} | {kind} | {config.train_min_length}–{config.train_max_length} | "
        f"{config.test_min_length}–{config.test_max_length} | {config.n_train} | {config.n_validation} | "
        f"{config.n_per_length} | {config.seed} |"
    )


def split_statistics(rows) -> str:
    """One statistics-table cell group for a split.

    Args:
        rows: a split (``datasets.Dataset``).

    Returns:
        ``"rows | min–max (distinct) | answer: share, …"`` as Markdown cells.
    """
    lengths, answers = np.asarray(rows["length"]), np.asarray(rows["answer"])
    if not len(lengths):
        return "0 | – | –"
    keys, counts = np.unique(answers, return_counts=True)
    shares = ", ".join(f"`{k}`: {c / len(answers):.3f}" for k, c in zip(keys.tolist(), counts.tolist()))
    return f"{len(lengths)} | {lengths.min()}–{lengths.max()} ({len(np.unique(lengths))}) | {shares}"


def render_body(configs: dict, stats: dict, overrides: dict) -> str:
    """The card's prose.

    Args:
        configs: Hub config name -> the :class:`RegularLanguageConfig` actually used.
        stats: (config, split) -> :func:`split_statistics` output.
        overrides: command-line overrides applied to every config (recorded in the card).

    Returns:
        The Markdown body.
    """
    return _CARD.format(
        version=RegularLanguageBuilder.VERSION,
        overrides=overrides_note(overrides),
        table="\n".join(_table_row(name, cfg) for name, cfg in configs.items()),
        stats="\n".join(f"| {c} | {s} | {v} |" for (c, s), v in stats.items()),
        citation=CITATION,
    )


def make_builder(name: str, overrides: dict, cache_dir: str | None) -> RegularLanguageBuilder:
    """The builder of a Hub config: its language's builder config, its fixed overrides, then the command line's."""
    config_name, fixed = EXPORT_CONFIGS[name]
    return RegularLanguageBuilder(config_name=config_name, cache_dir=cache_dir, **fixed, **overrides)


EXPORT = DatasetExport(
    name="formal_languages",
    configs=tuple(EXPORT_CONFIGS),
    config_tasks={name: language for name, (language, _) in EXPORT_CONFIGS.items()},
    make_builder=make_builder,
    statistics=split_statistics,
    render_body=render_body,
    card_metadata=dict(
        pretty_name="Regular-language suite (RegularGPT)",
        license="apache-2.0",
        task_categories=["text-classification", "text-generation"],
        tags=["in-context-learning", "formal-languages", "regular-languages", "length-generalization", "synthetic"],
    ),
    default_config="parity_check",
    overrides={field: int for field in CONFIG_FIELDS},
    description=__doc__,
)
