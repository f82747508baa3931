"""RegularGPT forward time and peak memory, sparse sliding-dilated attention vs a dense-mask implementation.

    OMP_NUM_THREADS=2 python benchmarks/regular_gpt_attention.py [--lengths 512 2048 8192]

"ours" is `icl_regular_gpt` as shipped (each query gathers its C keys). "reference" is the same model and weights
with every sliding-dilated attention replaced by dense attention under the T×T mask of P2 eq. (1) (SDPA with an
additive float mask). Both run forward passes in this process (time: median after warm-up); peak memory is the
peak resident-set growth (VmHWM) of a fresh subprocess per case. Target: ≥ 5× faster at T = 8192, O(T·C·log T) scaling.
"""

from __future__ import annotations

import argparse
import functools

import torch
from common import add_output_argument, median_time, peak_memory_mib, print_table, run_recorded
from transformers import AutoModelForCausalLM

import hf_icl
from hf_icl.mixers.dilated_attention import SlidingDilatedAttention


@functools.lru_cache(maxsize=16)
def dense_pattern(length: int, dilation: int, chunk_size: int):
    """Eq. (1) support and offset index as dense (T, T) tensors, built once per (T, dilation)."""
    distance = torch.arange(length)[:, None] - torch.arange(length)[None, :]  # (T, T)
    step = distance // dilation
    allowed = (distance >= 0) & (distance % dilation == 0) & (step < chunk_size)
    return allowed, step.clamp(0, chunk_size - 1).to(torch.int16)


def dense_forward(self, hidden_states, attention_mask=None, cache=None, dilation=1, **kwargs):
    """The same layer with a dense (T, T) eq. (1) mask: O(T²) time and memory."""
    q, k, v = self.split_heads(hidden_states)  # each (B, H, T, D)
    allowed, step = dense_pattern(hidden_states.shape[1], dilation, self.chunk_size)
    mask = torch.where(allowed, self.offset_bias[:, step.long()], torch.finfo(q.dtype).min)[None]  # (1, H, T, T)
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (B, H, T, D)
    return self.merge_heads(out.transpose(1, 2))


def build(dense: bool, preset: str):
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(hf_icl.config_for("regular_gpt", preset, vocab_size=10)).eval()
    if dense:
        for block in model.model.layers:
            block.mixer.forward = dense_forward.__get__(block.mixer, SlidingDilatedAttention)
    return model


def peak_forward_mib(dense: bool, length: int, preset: str) -> float:
    """Peak resident-set growth of one forward pass, measured in a fresh process (Linux VmHWM)."""
    setup = (
        "import torch\nfrom regular_gpt_attention import build\n"
        f"model, x = build({dense}, {preset!r}), torch.ones(1, {length}, dtype=torch.long)"
    )
    return peak_memory_mib(setup, "with torch.no_grad():\n    model(x)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lengths", type=int, nargs="+", default=[512, 2048, 8192])
    parser.add_argument("--preset", default="small")
    parser.add_argument("--repeats", type=int, default=3)
    add_output_argument(parser)
    args = parser.parse_args()
    ours, reference = build(False, args.preset), build(True, args.preset)
    time_rows, memory_rows = [], []
    for length in args.lengths:
        x = torch.randint(1, 10, (1, length))
        with torch.no_grad():
            torch.testing.assert_close(ours(x).logits, reference(x).logits, atol=1e-4, rtol=0)
            t_ours = median_time(lambda x=x: ours(x), repeats=args.repeats, warmup=1)
            t_ref = median_time(lambda x=x: reference(x), repeats=args.repeats, warmup=1)
        time_rows.append((f"forward T={length}", t_ours, t_ref))
        mem_ours, mem_ref = peak_forward_mib(False, length, args.preset), peak_forward_mib(True, length, args.preset)
        memory_rows.append((f"peak memory T={length}", mem_ours, mem_ref))
    config = ours.config
    print(
        f"regular_gpt {args.preset}: d={config.hidden_size}, K={config.num_hidden_layers}, "
        f"C={config.dilated_attention_chunk_size}, "
        f"threads={torch.get_num_threads()}, batch 1\n"
    )
    print_table(time_rows, unit="s", ours="sparse (ours)", reference="dense eq. (1) mask")
    print()
    print_table(memory_rows, unit="MiB", ours="sparse (ours)", reference="dense eq. (1) mask")


if __name__ == "__main__":
    run_recorded(main)
