"""Export the text language-modelling documents (P1 §6, Table 2; DESIGN §4) to a Hub-layout folder, optionally pushing.

    python -m hf_icl.export text_lm --output data/text_lm [--source stdlib|DIR|NAME] [--seed S] \\
        [--cache-dir DIR] [--push-to-hub ORG/text_lm]

Writes ``<output>/default/<split>-00000-of-00001.parquet`` for every split plus ``<output>/README.md``. The default
source, the docstrings of the Python standard library, needs no network.
"""

from __future__ import annotations

from ...hub.dataset_export import DatasetExport, overrides_note
from ..documents import corpus_licence, documents_version
from .text_lm import TextLMBuilder

_CARD = """# Text language modelling

Whole documents for next-token language modelling, the CPU-scale stand-in for the SlimPajama experiment of
*In-Context Language Learning: Architectures and Algorithms* (Akyürek et al., ICML 2024, §6, Table 2: RetNet, GLA
and Llama with and without n-gram heads). One row per document; characters outside printable ASCII and newline are
mapped to `?` or a space.

Generated with `hf_icl` (`python -m hf_icl.export text_lm`), builder version {version}{overrides}; corpus: {corpus}.

| config | source | BPE vocabulary | block size | seed |
|---|---|---|---|---|
{configs}

## Source and licence

{licence}

Documents are split by document: every 10th (in name order) to test, the next to validation, the rest to train; the
seed orders the documents within each split.

## Fields

- `name`: the document (module name, file path, or `source:row`); `text`: its text.

## Tokenisation and evaluation

`hf_icl` trains a byte-level BPE (`tokenizers`) with the listed vocabulary, `<|endoftext|>` included, on the train
documents only; each document's ids are followed by `<|endoftext|>`, concatenated and cut into blocks. The metric is
perplexity: exp of the mean next-token cross-entropy over every predicted position of the split's blocks.

## Statistics

| config | split | documents | characters | mean characters per document |
|---|---|---|---|---|
{stats}
"""


def statistics(split) -> dict:
    sizes = [len(text) for text in split["text"]]
    return {"documents": len(sizes), "characters": sum(sizes)}


def render_body(configs: dict, stats: dict, overrides: dict) -> str:
    config_rows = "\n".join(
        f"| {name} | {c.source} | {c.vocab_size} | {c.block_size} | {c.seed} |" for name, c in configs.items()
    )
    stat_rows = "\n".join(
        f"| {c} | {s} | {v['documents']} | {v['characters']:,} | {v['characters'] / max(v['documents'], 1):,.0f} |"
        for (c, s), v in stats.items()
    )
    first = next(iter(configs.values()))
    licence = corpus_licence(first)
    return _CARD.format(
        version=TextLMBuilder.VERSION,
        overrides=overrides_note(overrides),
        corpus=documents_version(first),
        configs=config_rows,
        licence=licence,
        stats=stat_rows,
    )


EXPORT = DatasetExport(
    name="text_lm",
    configs=tuple(c.name for c in TextLMBuilder.BUILDER_CONFIGS),
    make_builder=lambda name, overrides, cache_dir: TextLMBuilder(config_name=name, cache_dir=cache_dir, **overrides),
    statistics=statistics,
    render_body=render_body,
    card_metadata=dict(
        pretty_name="Text language modelling",
        license="other",  # the Hub has no PSF identifier: name and link it
        license_name="psf-2.0",
        license_link="https://docs.python.org/3/license.html",
        task_categories=["text-generation"],
        tags=["language-modeling", "n-gram-heads"],
    ),
    default_config="default",
    overrides={"source": str, "seed": int, "vocab_size": int, "block_size": int},
    description=__doc__,
)
