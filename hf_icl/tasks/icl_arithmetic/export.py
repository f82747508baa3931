"""Export ICL arithmetic (P3 §4.1, App. D; DESIGN §4, §5.7.9) to a Hub-layout folder, optionally pushing it.

    python -m hf_icl.export icl_arithmetic --output data/icl_arithmetic [--configs default single_task] \\
        [--n-train N --n-validation N --n-test N --seed S] [--cache-dir DIR] [--push-to-hub ORG/icl_arithmetic]

Writes ``<output>/<config>/<split>-00000-of-00001.parquet`` for every config and split plus ``<output>/README.md``
(YAML ``configs:`` and the dataset card). Afterwards ``datasets.load_dataset("<output>", "<config>")`` works offline.
"""

from __future__ import annotations

import numpy as np

from ...hub.dataset_export import DatasetExport, overrides_note
from .icl_arithmetic import CITATION, ICLArithmeticBuilder, check_row

CONFIGS = [c.name for c in ICLArithmeticBuilder.BUILDER_CONFIGS]

_CARD = """# ICL arithmetic

The synthetic in-context learning data of *Learning Fast and Slow: Representations for In-Context Weight Modulation*
(Zhmoginov et al., 2024, §4.1 and App. D). Every sequence holds several **tasks**; a task has hidden floats
a ~ U[0, 10) and b ~ U[−9, 10) and shows them only through examples

    AAA*BBB=±RRRRR|        R = trunc(a·A + b·B), truncated toward zero, with its sign and 5 digits

where A and B are uniform 3-digit integers with leading zeros. `#` closes each task. Example (P3 App. D):
`154*709=+07058|648*011=+05920|526*187=+06230|893*495=+11997|#`.

Generated with `hf_icl` (`python -m hf_icl.export icl_arithmetic`), builder version {version}{overrides}.

| config | tasks × examples | characters | train | validation | test | seed |
|---|---|---|---|---|---|---|
{configs}

## Fields

- `text`: the sequence (one character = one token; alphabet `0`–`9`, `*`, `=`, `+`, `-`, `|`, `#`).
- `a`, `b`: the float64 coefficients of every task, in order; each answer equals `trunc(a·A + b·B)` exactly
  (`hf_icl.tasks.icl_arithmetic.check_row`).

## Statistics

| config | split | sequences | mean \\|a\\| | mean b | negative answers | rows that pass `check_row` |
|---|---|---|---|---|---|---|
{stats}

## Evaluation

Next-token accuracy on the answer digits (the 5 digits after the sign) of the **last 2 examples of every task**,
teacher-forced (P3 §4.2). Paper figures (6-layer models, 400k steps): baseline Transformer 78.4 % best / 77.7 % mean;
slow/fast model 80.4 % / 79.1 %; the specialised model with frozen y 80.6 %. A least-squares fit of (a, b) to a task's
earlier examples reaches about 88 % on these positions.

```python
from datasets import load_dataset
from hf_icl.tasks.icl_arithmetic import check_row

test = load_dataset("<this repo>", "default", split="test")
assert all(check_row(row) for row in test)
```

## Licence and citation

Apache-2.0 (generated data). Cite the paper:

```bibtex
{citation}
```
"""


def statistics(split) -> dict:
    a, b = np.concatenate(split["a"]) if len(split) else np.zeros(0), np.concatenate(split["b"]) if len(split) else 0
    texts = split["text"]
    signs = [c for text in texts for c in text if c in "+-"]
    return {
        "sequences": len(split),
        "mean_abs_a": float(np.abs(a).mean()) if len(split) else 0.0,
        "mean_b": float(np.mean(b)) if len(split) else 0.0,
        "negative_share": signs.count("-") / max(len(signs), 1),
        "valid": sum(check_row(row) for row in split),
    }


def render_body(configs: dict, stats: dict, overrides: dict) -> str:
    config_rows = "\n".join(
        f"| {name} | {c.n_tasks} × {c.n_ex} | {c.sequence_length} | {c.n_train} | {c.n_validation} | {c.n_test} | "
        f"{c.seed} |"
        for name, c in configs.items()
    )
    stat_rows = "\n".join(
        f"| {c} | {s} | {v['sequences']} | {v['mean_abs_a']:.3f} | {v['mean_b']:.3f} | "
        f"{100 * v['negative_share']:.1f}% | {v['valid']} |"
        for (c, s), v in stats.items()
    )
    return _CARD.format(
        version=ICLArithmeticBuilder.VERSION,
        overrides=overrides_note(overrides),
        configs=config_rows,
        stats=stat_rows,
        citation=CITATION,
    )


EXPORT = DatasetExport(
    name="icl_arithmetic",
    configs=tuple(CONFIGS),
    make_builder=lambda name, overrides, cache_dir: ICLArithmeticBuilder(
        config_name=name, cache_dir=cache_dir, **overrides
    ),
    statistics=statistics,
    render_body=render_body,
    card_metadata=dict(
        pretty_name="ICL arithmetic",
        license="apache-2.0",
        task_categories=["text-generation"],
        tags=["in-context-learning", "synthetic", "arithmetic", "slow-features"],
    ),
    default_config="default",
    overrides={"n_train": int, "n_validation": int, "n_test": int, "seed": int},
    description=__doc__,
)
