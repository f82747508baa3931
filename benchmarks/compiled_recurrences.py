"""The zoo mixers' compiled CPU forms against the PyTorch forms they replaced, side by side in one run (issue 50).

One mixer each, forward + backward at the RegBench zoo recipe's shape (tiny preset, B = 32, T = 384, one thread),
with `HF_ICL_SCAN_BACKEND=numba` (the package's default on CPU) against `torch`:

- DeltaNet, Gated DeltaNet and RWKV-7: the DPLR recurrence (`mixers/ops/dplr_numba.py`) against `dplr_chunked`;
- Mamba-2 and GLA: the linear recurrence without the low-rank term against `chunked_linear_attention`;
- H3: the compiled causal Toeplitz-gated mix (`mixers/ops/toeplitz_numba.py`) against the blocked ((q kᵀ) ⊙ M) v.

Each mixer's outputs and gradients are checked to agree first; the two sides alternate in `--rounds` rounds
(median of `--repeats` timed calls each), ratio = PyTorch form ÷ compiled form, the median of the per-round ratios.

Run: `OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python benchmarks/compiled_recurrences.py [--rounds 5 --repeats 3]
[--output docs/results/benchmarks/compiled_recurrences.json]`.
"""

from __future__ import annotations

import argparse
import statistics

import torch
from common import add_output_argument, median_time, run_recorded, with_scan_backend
from transformers import AutoModelForCausalLM

import hf_icl

MIXERS_TIMED = ("deltanet", "gated_deltanet", "rwkv7", "mamba2", "gla", "h3")
BATCH, LENGTH = 32, 384


def mixer_case(architecture: str):
    """(mixer, input) of the first layer of an initialised `architecture` model (tiny preset), at the recipe's
    shape."""
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(hf_icl.config_for(architecture, "tiny", vocab_size=40))
    mixer = model.model.layers[0].mixer
    x = torch.randn(BATCH, LENGTH, model.config.hidden_size, requires_grad=True)
    return mixer, x


def outputs_and_gradients(mixer, x):
    mixer.zero_grad()
    x.grad = None
    out = mixer(x)
    out.square().mean().backward()
    return [out.detach(), x.grad.clone(), *(p.grad.clone() for p in mixer.parameters() if p.grad is not None)]


def time_mixer(architecture: str, rounds: int, repeats: int) -> None:
    """One table row: the mixer's forward + backward under both backends, checked equal, then interleaved."""
    mixer, x = mixer_case(architecture)
    results = {}
    for backend in ("numba", "torch"):
        results[backend] = []
        with_scan_backend(lambda b=backend: results[b].extend(outputs_and_gradients(mixer, x)), backend)()
    for ours, reference in zip(results["numba"], results["torch"], strict=True):
        scale = 1 + reference.abs().max().item()
        torch.testing.assert_close(ours, reference, rtol=1e-3, atol=1e-4 * scale)

    def step():
        mixer(x).square().mean().backward()

    times = {"numba": [], "torch": []}
    for _ in range(rounds):
        for backend in ("numba", "torch"):
            times[backend].append(median_time(with_scan_backend(step, backend), repeats, clock="process"))
    ratio = statistics.median(slow / fast for slow, fast in zip(times["torch"], times["numba"]))
    torch_ms, numba_ms = (statistics.median(times[side]) * 1e3 for side in ("torch", "numba"))
    print(f"| {architecture} | {torch_ms:.4g} | {numba_ms:.4g} | {ratio:.3f} |")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="alternations of the two sides")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per side and round (median)")
    parser.add_argument("--mixers", nargs="*", default=list(MIXERS_TIMED), help="architectures whose mixer is timed")
    add_output_argument(parser)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    print(f"\n### Compiled CPU forms against the PyTorch forms, one mixer, B = {BATCH}, T = {LENGTH}, forward + "
          "backward, one thread\n")  # fmt: skip
    print("| mixer | PyTorch form, median (ms) | compiled, median (ms) | ratio (median of per-round ratios) |")
    print("|---|---|---|---|")
    for architecture in args.mixers:
        time_mixer(architecture, args.rounds, args.repeats)


if __name__ == "__main__":
    run_recorded(main)
