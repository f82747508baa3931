"""Export RegBench (P1 §3; DESIGN §2.2, §5.1) to a Hub-layout folder, optionally pushing it.

    python -m hf_icl.export regbench --output data/regbench [--configs n150 n2500 ...] \\
        [--n-train N --n-test N --n-validation N --seed S] [--cache-dir DIR] [--push-to-hub ORG/regbench]

Writes ``<output>/<config>/<split>-00000-of-00001.parquet`` for every config and split, plus
``<output>/README.md``: YAML front matter whose ``configs:`` lists each config's data files, and the
dataset card as prose. Afterwards ``datasets.load_dataset("<output>", "<config>")`` works offline.
The folder layout and the push are shared with the other exports (:mod:`hf_icl.hub.dataset_export`); pushing uses
``hf_icl.hub.push_folder`` (``HfApi.upload_folder``) and happens only with ``--push-to-hub``.
"""

from __future__ import annotations

from ...hub.dataset_export import DatasetExport, overrides_note
from .regbench import CITATION, RegBenchBuilder, instance_statistics

CONFIGS = [c.name for c in RegBenchBuilder.BUILDER_CONFIGS]
_RANGE_KEYS = ("states", "alphabet", "edges", "strings", "length")

_CARD = """# RegBench

RegBench is the in-context language learning benchmark of *In-Context Language Learning: Architectures
and Algorithms* (Akyürek et al., ICML 2024, §3). Each row is one **problem instance**: 10–19 strings
(10–20 in `paper_ranges`) sampled from one random probabilistic regular language, joined by `|`. A model
must infer the language in context and predict every next symbol; scoring is against the exact
next-token distribution of the row's automaton.

Generated with `hf_icl` (`python -m hf_icl.export regbench`), builder version {version}{overrides}.

## Generation

Per automaton: a random number of states, an alphabet sampled without replacement from `a`–`r`, and
for every state a random number of out-edges with distinct symbols and distinct targets (no self-loops);
start state 0, all states accepting. The DFA is Hopcroft-minimised, trimmed to reachable states and
renumbered in BFS order (symbols in order), then made probabilistic with uniform out-edge probabilities.
Per instance: a number of strings, each with a length drawn up front, each a random walk from the start
state. Train, validation and test automata are pairwise non-isomorphic across *and* within splits, and
the bytes depend only on the seed.

| config | train | validation | test | seed | states | alphabet | out-edges | strings | length |
|---|---|---|---|---|---|---|---|---|---|
{ranges}

The `n*` configs use the ranges of the authors' released code, which produced the published figures;
`paper_ranges` uses the ranges stated in the paper's text (1–4 edges, 10–20 strings, lengths 1–50).

## Fields

- `text`: the instance, over `a`–`r` and the separator `|` (one character = one token).
- `num_states`, `start_state`: the minimised automaton (start is always 0).
- `transitions`: list of `{{src, symbol, dst}}` edges of the minimised automaton.
- `alphabet`: the sampled alphabet (the symbols used by `transitions` are a subset).

## Statistics

| config | split | instances | tokens / instance | strings / instance | string length | states | `\\|` share |
|---|---|---|---|---|---|---|---|
{stats}

## Evaluation

Every position of `text[:-1]` is scored. The truth runs the automaton on the current string's prefix
(the start state right after `|`) and puts 1/k on each of the state's k out-edge symbols; `|` never has
true probability. Accuracy is the share of positions whose argmax has true probability > 0; TVD is ½·L1
over the vocabulary, averaged over positions. Token order: `['.', 'a', …, 'r', '|']`.

```python
from datasets import load_dataset
from hf_icl.tasks.regbench import next_token_truth
from hf_icl.baselines import InContextNGram
from hf_icl.evaluation import regbench_metrics

test = load_dataset("<this repo>", "n2500", split="test")
probs = [InContextNGram(3).predict_proba(row["text"]) for row in test]
print(regbench_metrics(probs, test))
```

Reference figures for the paper's in-context n-gram (test set, 500 automata): 1-gram 0.472 / 0.633,
2-gram 0.829 / 0.324, 3-gram 0.935 / 0.255 (accuracy / TVD).

## Citation

```bibtex
{citation}
```
"""


def _range_row(name: str, config) -> str:
    spans = " | ".join(f"{getattr(config, 'min_' + k)}–{getattr(config, 'max_' + k)}" for k in _RANGE_KEYS)
    return f"| {name} | {config.n_train} | {config.n_validation} | {config.n_test} | {config.seed} | {spans} |"


def render_body(configs: dict, stats: dict, overrides: dict) -> str:
    """The card's prose.

    Args:
        configs: config name -> :class:`RegBenchConfig` actually used.
        stats: (config, split) -> :func:`instance_statistics` output.
        overrides: command-line overrides applied to every config (recorded in the card).

    Returns:
        The Markdown body.
    """
    stat_rows = "\n".join(
        f"| {c} | {s} | {v['instances']} | {v['mean_tokens']:.1f} | {v['mean_strings']:.2f} | "
        f"{v['mean_string_length']:.2f} | {v['mean_states']:.2f} | {100 * v['separator_share']:.2f}% |"
        for (c, s), v in stats.items()
    )
    return _CARD.format(
        version=RegBenchBuilder.VERSION,
        overrides=overrides_note(overrides),
        ranges="\n".join(_range_row(name, cfg) for name, cfg in configs.items()),
        stats=stat_rows,
        citation=CITATION,
    )


EXPORT = DatasetExport(
    name="regbench",
    configs=tuple(CONFIGS),
    make_builder=lambda name, overrides, cache_dir: RegBenchBuilder(config_name=name, cache_dir=cache_dir, **overrides),
    statistics=instance_statistics,
    render_body=render_body,
    card_metadata=dict(
        pretty_name="RegBench",
        license="apache-2.0",
        task_categories=["text-generation"],
        tags=["in-context-learning", "formal-languages", "regular-languages", "synthetic"],
    ),
    default_config="n2500",
    overrides={"n_train": int, "n_test": int, "n_validation": int, "seed": int},
    description=__doc__,
)
