"""Print the README's parameter table: every architecture × size preset, non-embedding and total parameters.

    python experiments/parameter_table.py [--output docs/results/parameters]

With `--output STEM`, also writes `STEM.json` (the counts) and `STEM.md` (the table), which the README's
architecture table cites.

Presets of one size are matched on non-embedding parameters (all parameters minus token/position embeddings and
the output projection); the last column is the deviation from the Transformer of the same size (limit ±15 %).
"""

from __future__ import annotations

import torch
from transformers import AutoModelForCausalLM

import hf_icl
from hf_icl.architectures import ARCHITECTURES, non_embedding_parameters

SIZES = ("tiny", "small", "base")


def parameter_counts(arch: str, size: str) -> tuple[int, int]:
    """(non-embedding, total) parameters of `arch` at preset `size` with a 20-token vocabulary (RegBench's).

    Args:
        arch (`str`): one of `hf_icl.list_architectures()`.
        size (`str`): a preset of that architecture.
    """
    with torch.device("meta"):  # shapes only: no memory, no initialisation
        model = AutoModelForCausalLM.from_config(hf_icl.config_for(arch, size, vocab_size=20))
    return non_embedding_parameters(model), sum(p.numel() for p in model.parameters())


def main(argv=None):
    import argparse
    import json
    from pathlib import Path

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, metavar="STEM", help="also write STEM.json and STEM.md")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    counts = {(arch, size): parameter_counts(arch, size) for arch in hf_icl.list_architectures() for size in SIZES}
    header = " | ".join(f"{s} (non-emb. / total / vs transformer)" for s in SIZES)
    lines = [f"| architecture | {header} | presets |", "|---|" + "---|" * (len(SIZES) + 1)]
    record = {}
    for arch in hf_icl.list_architectures():
        cells = []
        for size in SIZES:
            core, total = counts[arch, size]
            delta = core / counts["transformer", size][0] - 1
            cells.append(f"{core:,} / {total:,} / {delta:+.1%}")
            record.setdefault(arch, {})[size] = {"non_embedding": core, "total": total,
                                                 "vs_transformer_percent": round(100 * delta, 1)}  # fmt: skip
        presets = ", ".join(sorted(ARCHITECTURES[arch].presets))
        lines.append(f"| `{arch}` | " + " | ".join(cells) + f" | {presets} |")
    print("\n".join(lines))
    if args.output is not None:
        args.output.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        intro = ("Non-embedding / total parameters of every architecture × size preset with RegBench's 20-token "
                 "vocabulary, and the deviation from the Transformer of the same size: written by `python "
                 "experiments/parameter_table.py --output docs/results/parameters` (with `parameters.json`); the "
                 "README's architecture table cites it.")  # fmt: skip
        args.output.with_suffix(".md").write_text(intro + "\n\n" + "\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
