"""Benchmark: in-context Baum–Welch (P1 Alg. 2, App. C.2–C.4), batched over prefixes, vs the per-prefix refit.

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python benchmarks/baum_welch.py [--instances 50] [--every 25] [--full-split]

Both run in this process, single-threaded, on the RegBench test split (n2500 config, seed 0); times are CPU seconds
of this process (``time.process_time``), so other load on the machine changes them less than wall time. "reference"
is the straightforward per-prefix refit (``benchmarks/_baum_welch_reference.py``: dense 144-state HMM, numpy loops,
one string at a time), the oracle of ``tests/test_baum_welch.py``. Refitting every prefix of 50 instances with it
takes about half an hour, so it runs on the prefixes ``i ≡ 0 (mod --every)`` of every instance and its time for all
prefixes is extrapolated by the letters it refits (its cost is linear in the letters of a prefix's corpus); both
outputs are compared on those prefixes. "ours" is :class:`hf_icl.baselines.BaumWelch` on all prefixes of the same
instances, float64, with its compiled numba backend (the default when numba is installed) and with the batched torch
backend (``--torch-float32`` adds torch's float32 option), after a warm-up on one short instance (which also loads or
compiles the numba kernel), timed once (no repeats: a run takes minutes). ``--full-split`` also times all 500 test
instances (float64, numba backend).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from _baum_welch_reference import reference_predict_proba
from common import add_output_argument, run_recorded

from hf_icl.baselines import BaumWelch
from hf_icl.tasks import task_builder


def refit_letters(text: str, rows) -> int:
    """Letters in the corpora the reference refits for the prefix ``rows`` (a ``|`` row refits the one before it)."""
    return sum(len(text[: i + 1].replace("|", "")) for i in rows)


def cpu_seconds(fn):
    start = time.process_time()
    result = fn()
    return result, time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", type=int, default=50)
    parser.add_argument("--every", type=int, default=25, help="reference prefixes: i ≡ 0 (mod every)")
    parser.add_argument("--full-split", action="store_true", help="also time all 500 test instances")
    parser.add_argument("--torch-float32", action="store_true", help="also time the torch backend in float32")
    add_output_argument(parser)
    args = parser.parse_args()
    builder = task_builder("regbench", n_train=2500)
    builder.download_and_prepare()
    texts = list(builder.as_dataset(split="test")["text"])
    chosen = texts[: args.instances]
    models = {"numba float64": BaumWelch(backend="numba"), "torch float64": BaumWelch(backend="torch")}
    if args.torch_float32:
        models["torch float32"] = BaumWelch(backend="torch", dtype=torch.float32)
    runs = {}
    for name, model in models.items():
        model.predict_proba(min(texts, key=len))  # warm-up
        runs[name] = cpu_seconds(lambda m=model: m.predict_proba_batch(chosen))

    sampled, reference_seconds, largest = 0, 0.0, dict.fromkeys(models, 0.0)
    for b, text in enumerate(chosen):
        rows = list(range(0, len(text) - 1, args.every))
        reference, seconds = cpu_seconds(lambda t=text, r=rows: reference_predict_proba(t, rows=r))
        reference_seconds += seconds
        sampled += refit_letters(text, rows)
        for name, (probs, _) in runs.items():
            largest[name] = max(largest[name], float(np.abs(reference - probs[b][rows]).max()))
    total = sum(refit_letters(text, range(len(text) - 1)) for text in chosen)
    extrapolated = reference_seconds * total / sampled
    positions = sum(len(text) - 1 for text in chosen)
    print(f"{len(chosen)} RegBench test instances (n2500), {positions} positions, 144 states, 10 EM iterations;")
    print(f"reference run on prefixes i ≡ 0 (mod {args.every}): {reference_seconds:.1f} CPU s for {sampled} refit")
    print(f"letters, extrapolated to all {total} refit letters (×{total / sampled:.1f}).\n")
    print("| case | ours (CPU s) | reference (CPU s) | ratio | max abs diff |")
    print("|---|---|---|---|---|")
    for name, (_, seconds) in runs.items():
        case = f"Baum–Welch {name}, all prefixes of {len(chosen)} instances"
        diff = f"{largest[name]:.1e}"
        print(
            f"| {case} | {seconds:.1f} | {extrapolated:.0f} (extrapolated) | {extrapolated / seconds:.1f}x | {diff} |"
        )
    if args.full_split:
        _, seconds = cpu_seconds(lambda: models["numba float64"].predict_proba_batch(texts))
        tokens = sum(map(len, texts))
        print(f"\nours, numba float64, all {len(texts)} test instances ({tokens} tokens): {seconds:.0f} CPU s")


if __name__ == "__main__":
    run_recorded(main)
