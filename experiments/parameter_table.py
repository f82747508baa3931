"""Print the README's parameter table: every architecture × size preset, non-embedding and total parameters.

    python experiments/parameter_table.py

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


def main():
    torch.set_num_threads(1)
    counts = {(arch, size): parameter_counts(arch, size) for arch in hf_icl.list_architectures() for size in SIZES}
    print("| architecture | " + " | ".join(f"{s} (non-emb. / total / vs transformer)" for s in SIZES) + " | presets |")
    print("|---|" + "---|" * (len(SIZES) + 1))
    for arch in hf_icl.list_architectures():
        cells = []
        for size in SIZES:
            core, total = counts[arch, size]
            delta = core / counts["transformer", size][0] - 1
            cells.append(f"{core:,} / {total:,} / {delta:+.1%}")
        presets = ", ".join(sorted(ARCHITECTURES[arch].presets))
        print(f"| `{arch}` | " + " | ".join(cells) + f" | {presets} |")


if __name__ == "__main__":
    main()
