"""N-gram head A(n)·h: time and peak memory of `ngram_head_average` vs P1 Figure 7 (T×T boolean masks).

    OMP_NUM_THREADS=1 python benchmarks/ngram_head.py [--lengths 512 2048 8192] [--orders 1 3]

"ours" is `hf_icl.mixers.ngram.ngram_head_average` (exact n-gram ids, sort + prefix sums: O(T·d + T log T)).
"reference" is P1 Appendix F Figure 7 as transcribed in `tests/test_ngram_heads.py` (O(T²) time and memory).
Both get the same random tokens (vocabulary 20, like RegBench) and hidden states (batch 8, d = 128, fp32), one
thread, forward only. Time: median after warm-up in this process; the outputs are checked equal first. Peak
memory: resident-set growth (VmHWM, reset through /proc/self/clear_refs) of one call in a fresh process. A
reference case whose estimated peak exceeds `--reference-limit-gib` is not run (the machine may be shared): that
row is measured at batch 1 for both, and a note gives ours at full batch and the reference's estimated peak.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import torch
from common import add_output_argument, median_time, peak_memory_mib, print_table, run_recorded

from hf_icl.mixers.ngram import ngram_head_average

TESTS = Path(__file__).resolve().parents[1] / "tests"
VOCAB, WIDTH = 20, 128


def figure7():
    """The Figure 7 transcription of the test suite (the semantic oracle of the fast head)."""
    sys.path.insert(0, str(TESTS))
    spec = importlib.util.spec_from_file_location("test_ngram_heads", TESTS / "test_ngram_heads.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.figure7_ngram_head


def inputs(batch: int, length: int):
    gen = torch.Generator().manual_seed(length)
    return torch.randint(0, VOCAB, (batch, length), generator=gen), torch.randn(batch, length, WIDTH, generator=gen)


def reference_peak_gib(batch: int, length: int, order: int) -> float:
    """Figure 7's peak: n int64 masks and their int64 stack (16·n bytes per (b, i, j)) plus ~10 bytes of bool/int64/
    fp32 temporaries; this matches the peaks measured at T = 2048 (batch 8) and T = 8192 (batch 1) to ~3 %."""
    return batch * length * length * (16 * order + 10) / 2**30


def peak_head_mib(reference: bool, batch: int, length: int, order: int) -> float:
    """Peak resident-set growth of one forward call, measured in a fresh process (Linux VmHWM)."""
    setup = (
        "import torch\nimport ngram_head as bench\ntorch.set_num_threads(1)\n"
        f"fn = bench.figure7() if {reference} else bench.ngram_head_average\n"
        f"ids, hidden = bench.inputs({batch}, {length})"
    )
    call = (
        "with torch.no_grad():\n"
        f"    out = fn(ids, hidden, {order}, 1) if not {reference} else fn(ids, hidden, shift_step=1, ngram={order})"
    )
    return peak_memory_mib(setup, call)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lengths", type=int, nargs="+", default=[512, 2048, 8192])
    parser.add_argument("--orders", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--reference-limit-gib", type=float, default=8.0)
    add_output_argument(parser)
    args = parser.parse_args()
    torch.set_num_threads(1)
    reference = figure7()
    time_rows, memory_rows, notes = [], [], []
    for order in args.orders:
        for length in args.lengths:
            batch, estimate = args.batch, reference_peak_gib(args.batch, length, order)
            if estimate > args.reference_limit_gib:  # measure ours alone at full batch, then both at batch 1
                ids, hidden = inputs(batch, length)
                with torch.no_grad():
                    alone = median_time(lambda: ngram_head_average(ids, hidden, order, 1), args.repeats, warmup=1)  # noqa: B023
                notes.append(
                    f"n={order} T={length}: Figure 7 at batch {batch} would need ~{estimate:.1f} GiB "
                    f"(> --reference-limit-gib {args.reference_limit_gib}), so both are measured at batch 1; "
                    f"ours at batch {batch}: {alone:.4g} s, {peak_head_mib(False, batch, length, order):.4g} MiB"
                )
                batch = 1
            ids, hidden = inputs(batch, length)
            case = f"n={order} T={length} B={batch}"
            with torch.no_grad():
                ours = ngram_head_average(ids, hidden, order, 1)
                torch.testing.assert_close(ours, reference(ids, hidden, shift_step=1, ngram=order), atol=1e-5, rtol=0)
                t_ours = median_time(lambda: ngram_head_average(ids, hidden, order, 1), args.repeats, warmup=1)  # noqa: B023
                t_ref = median_time(lambda: reference(ids, hidden, shift_step=1, ngram=order), args.repeats, 1)  # noqa: B023
            time_rows.append((case, t_ours, t_ref))
            memory_rows.append(
                (case, peak_head_mib(False, batch, length, order), peak_head_mib(True, batch, length, order))
            )
            print(f"done {case}: {t_ref / t_ours:.0f}x faster", file=sys.stderr)
    print(f"n-gram head A(n)·h, shift 1: d={WIDTH}, vocabulary {VOCAB}, threads={torch.get_num_threads()}, fp32\n")
    print_table(time_rows, unit="s", ours="ours", reference="Figure 7")
    print()
    print_table(memory_rows, unit="MiB", ours="ours", reference="Figure 7")
    for note in notes:
        print(f"\n- {note}")


if __name__ == "__main__":
    run_recorded(main)
