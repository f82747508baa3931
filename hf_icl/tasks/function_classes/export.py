"""Export the in-context regression suite's fixed prompt sets (P5 §3.2; DESIGN §5.5) to a Hub-layout folder.

    python -m hf_icl.export function_classes --output data/function_classes [--configs linear_regression ...] \\
        [--n-train N --n-validation N --n-test N --seed S] [--cache-dir DIR] [--push-to-hub ORG/icl-function-classes]

Writes ``<output>/<config>/<split>-00000-of-00001.parquet`` for every config and split, plus ``<output>/README.md``
(the card, with YAML ``configs:``). Afterwards ``datasets.load_dataset("<output>", "<config>")`` works offline.
Pushing uses ``hf_icl.hub.push_folder`` and happens only with ``--push-to-hub``.
"""

from __future__ import annotations

import numpy as np

from ...hub.dataset_export import DatasetExport, overrides_note
from .function_class_data import CITATION, FunctionClassBuilder

CONFIGS = [c.name for c in FunctionClassBuilder.BUILDER_CONFIGS]

_CARD = """# In-context regression function classes (P5)

The tasks of *Can Mamba Learn How to Learn? A Comparative Study on In-Context Learning Tasks* (Park et al., ICML
2024, §3.2, Table 2), after Garg et al. (2022). Each row is one **prompt**: N examples (x_i, f(x_i)) of one random
function f of the config's class. A model reads x₁, y₁, …, x_{{i−1}}, y_{{i−1}}, x_i and predicts y_i.

Generated with `hf_icl` (`python -m hf_icl.export function_classes`), builder version {version}{overrides}, by
`hf_icl.tasks.function_classes.sample`: the bytes depend on the seed only.

## Configs

| config | task | d | N | options | train | validation | test |
|---|---|---|---|---|---|---|---|
{configs}

`train` is the fixed training set of vector MQAR (P5 App. B.2; 300,000 sequences in the paper, 20,000 here by
default); for the other tasks models train on fresh prompts every step and `train` is a small reference sample.
The test sets have the paper's 1,280 prompts (3,000 for vector MQAR, App. B.2).

## Definitions (x ~ N(0, I_d) unless said otherwise)

- `linear_regression`: w ~ N(0, I_d), y = wᵀx. `noisy_linear_regression`: plus N(0, 1) noise.
- `sparse_linear_regression`: w with all but k = 3 random coordinates zeroed.
- `relu_2nn_regression`: y = √(2/h)·W⁽²⁾ᵀ relu(W⁽¹⁾x), entries N(0, 1), h = 100.
- `decision_tree`: depth 4; inner nodes test a uniform coordinate (right iff x[i] > 0); leaves N(0, 1).
- `orthogonal_outlier_regression`: with probability p = 0.5 a pair is replaced by
  ((a_x u + b_x v)/(a_x² + b_x²), (a_y u + b_y v)/(a_y² + b_y²)) with u, v the projections of two N(0, I_d)
  vectors onto w⊥; the y slot then holds that vector (`y_tokens`); `loss_mask` marks the clean pairs.
- `many_outlier_regression`: with probability p = 0.9 a pair is replaced by (1_d, [1, 0, …, 0]) (y = 1).
- `sparse_parity`: x uniform in {{±1}}^10, y = Π_{{j∈S}} x[j], |S| = 2; here S is drawn per prompt (in training the
  reference draws one S per batch).
- `cot_io`: s = relu(Wx), W_ij ~ N(0, 2/k), y = vᵀs, v ~ N(0, I_k), d = 10, k = 8 (`ss` holds the steps s).
- `vector_mqar`, `vector_mqar_4_queries`: 32 keys and values uniform on the **unit** sphere in d = 20, then 16 (or
  4) queries, each a copy of a distinct key; `xs` holds keys then queries, `ys` the values then each query's value;
  `loss_mask` marks the queries.
- `linear_regression_<variant>`: out-of-distribution prompts (Garg et al. §4): `scaled_x` (x × 2), `noisy_y`
  (N(0, 1) noise on the in-context labels; `targets` are clean), `skewed_covariance` (eigenvalues ∝ 1/i², trace
  d), `orthant` (every x of a prompt in one random orthant).

## Where this follows the paper rather than the reference code

The reference implementation (krafton-ai/mambaformer-icl) departs from the paper in places; these sets follow the
paper: vector MQAR vectors lie on the unit sphere (the code scales them to √d), every query copies a key (the code's
query matches no key with probability 1/(n + 1)) and the target is the query's value (the code's metric compares
predictions with keys); orthogonal outliers use the prompt's own w and per-pair coefficients, with separate
coefficients for x and y (the code draws a fresh task's w, one dummy vector per prompt, and divides b by an
already-normalised a).

## Fields

`xs` (N × d), `ys` (N, or N × d for vector MQAR), and where the task has them `loss_mask` (N, bool), `ss` (N × k),
`y_tokens` (N × d), `targets` (N).

## Statistics

| config | split | prompts | mean y | std y | scored share |
|---|---|---|---|---|---|
{stats}

## Usage

```python
from datasets import load_dataset
from hf_icl.tasks.function_classes import prompts_from_rows
from hf_icl.baselines.regression import least_squares

test = prompts_from_rows(load_dataset("<this repo>", "linear_regression", split="test"))
errors = ((least_squares(test["xs"], test["ys"]) - test["ys"]) ** 2).mean(0) / 20  # (d − i)/d, then 0
```

## Citation

```bibtex
{citation}
```
"""


def statistics(split) -> dict:
    """Prompt count, label mean and spread, and the share of scored examples."""
    table = split.with_format("numpy")
    ys = np.asarray(table["ys"], dtype=np.float64)
    scored = float(np.asarray(table["loss_mask"]).mean()) if "loss_mask" in split.column_names else 1.0
    return {"prompts": len(split), "mean_y": float(ys.mean()), "std_y": float(ys.std()), "scored": scored}


def render_body(configs: dict, stats: dict, overrides: dict) -> str:
    """The card's prose: configs, definitions, departures from the reference code, statistics."""
    rows = []
    for name, config in configs.items():
        resolved = config.resolved()
        options = ", ".join(f"{k}={v}" for k, v in resolved["options"].items()) or "–"
        sizes = f"{config.n_train} | {config.n_validation} | {config.n_test}"
        rows.append(f"| {name} | {config.task} | {resolved['n_dims']} | {resolved['n_points']} | {options} | {sizes} |")
    stat_rows = "\n".join(
        f"| {c} | {s} | {v['prompts']} | {v['mean_y']:.3f} | {v['std_y']:.3f} | {v['scored']:.3f} |"
        for (c, s), v in stats.items()
    )
    return _CARD.format(
        version=FunctionClassBuilder.VERSION,
        overrides=overrides_note(overrides),
        configs="\n".join(rows),
        stats=stat_rows,
        citation=CITATION,
    )


EXPORT = DatasetExport(
    name="function_classes",
    configs=tuple(CONFIGS),
    config_tasks={config.name: config.task for config in FunctionClassBuilder.BUILDER_CONFIGS},
    make_builder=lambda name, overrides, cache_dir: FunctionClassBuilder(
        config_name=name, cache_dir=cache_dir, **overrides
    ),
    statistics=statistics,
    render_body=render_body,
    card_metadata=dict(
        pretty_name="In-context regression function classes",
        license="apache-2.0",
        task_categories=["tabular-regression"],
        tags=["in-context-learning", "synthetic", "regression", "sparse-parity", "associative-recall"],
    ),
    default_config="linear_regression",
    overrides={"n_train": int, "n_validation": int, "n_test": int, "seed": int},
    description=__doc__,
)
