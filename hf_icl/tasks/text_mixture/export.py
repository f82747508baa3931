"""Export text mixtures (P3 §4.1; DESIGN §4) to a Hub-layout folder, optionally pushing it.

    python -m hf_icl.export text_mixture --output data/text_mixture [--configs default short] \\
        [--source stdlib|DIR|NAME] \\
        [--n-train N --n-validation N --n-test N --seed S] [--cache-dir DIR] [--push-to-hub ORG/text_mixture]

Writes ``<output>/<config>/<split>-00000-of-00001.parquet`` for every config and split plus ``<output>/README.md``.
The default source, the docstrings of the Python standard library, needs no network.
"""

from __future__ import annotations

import numpy as np

from ...hub.dataset_export import DatasetExport, overrides_note
from ..documents import corpus_licence, documents_version
from .text_mixture import TextMixtureBuilder

CONFIGS = [c.name for c in TextMixtureBuilder.BUILDER_CONFIGS]

_CARD = """# Text mixture

The text-mixture data of *Learning Fast and Slow: Representations for In-Context Weight Modulation* (Zhmoginov et
al., 2024, §4.1): an excerpt of one document cut at a token position drawn uniformly from [l_start, l_finish], then an
excerpt of another document, truncated to l_max tokens. A slow-feature model should change its slow features y near
the join (`cut`). Tokens are characters (printable ASCII and newline; other characters are mapped to `?` or a space).

Generated with `hf_icl` (`python -m hf_icl.export text_mixture`), builder version {version}{overrides}; corpus:
{corpus}.

| config | cut range | l_max | train | validation | test | seed | source |
|---|---|---|---|---|---|---|---|
{configs}

## Source and licence

{licence}

Documents are split by document: every 10th (in name order) to test, the next to validation, the rest to train.

## Fields

- `text`: l_max characters; `cut`: the index of the first character of the second excerpt.
- `first`, `second`: the names of the two documents.

## Statistics

| config | split | rows | mean cut | distinct first documents |
|---|---|---|---|---|
{stats}

## Evaluation

Next-character cross-entropy (nats per token) overall, on the first excerpt and on the second (after the join).
"""


def statistics(split) -> dict:
    return {
        "rows": len(split),
        "mean_cut": float(np.mean(split["cut"])) if len(split) else 0.0,
        "documents": len(set(split["first"])),
    }


def render_body(configs: dict, stats: dict, overrides: dict) -> str:
    config_rows = "\n".join(
        f"| {name} | [{c.l_start}, {c.l_finish}] | {c.l_max} | {c.n_train} | {c.n_validation} | {c.n_test} | {c.seed} "
        f"| {c.source} |"
        for name, c in configs.items()
    )
    stat_rows = "\n".join(
        f"| {c} | {s} | {v['rows']} | {v['mean_cut']:.1f} | {v['documents']} |" for (c, s), v in stats.items()
    )
    first = next(iter(configs.values()))
    licence = corpus_licence(first)
    return _CARD.format(
        version=TextMixtureBuilder.VERSION,
        overrides=overrides_note(overrides),
        corpus=documents_version(first),
        configs=config_rows,
        licence=licence,
        stats=stat_rows,
    )


EXPORT = DatasetExport(
    name="text_mixture",
    configs=tuple(CONFIGS),
    make_builder=lambda name, overrides, cache_dir: TextMixtureBuilder(
        config_name=name, cache_dir=cache_dir, **overrides
    ),
    statistics=statistics,
    render_body=render_body,
    card_metadata=dict(
        pretty_name="Text mixture",
        license="other",  # the Hub has no PSF identifier: name and link it
        license_name="psf-2.0",
        license_link="https://docs.python.org/3/license.html",
        task_categories=["text-generation"],
        tags=["language-modeling", "slow-features", "document-mixture"],
    ),
    default_config="default",
    overrides={"n_train": int, "n_validation": int, "n_test": int, "seed": int, "source": str},
    description=__doc__,
)
