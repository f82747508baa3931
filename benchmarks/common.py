"""Shared timing helpers: warm-up, then the median of repeats; tables as `case | ours | reference | ratio`."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path


def median_time(fn, repeats: int = 5, warmup: int = 2, clock: str = "wall") -> float:
    """Median time of `fn()` in seconds after `warmup` untimed calls: wall time, or this process's CPU time
    (`clock="process"`, robust to other jobs on a shared machine)."""
    now = time.perf_counter if clock == "wall" else time.process_time
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = now()
        fn()
        times.append(now() - start)
    return statistics.median(times)


def print_table(rows, unit: str = "s", ours: str = "ours", reference: str = "reference") -> None:
    """Print one Markdown table; `rows` are (case, ours_value, reference_value) and ratio = ours / reference."""
    print(f"| case | {ours} ({unit}) | {reference} ({unit}) | ratio |")
    print("|---|---|---|---|")
    for case, ours_value, ref_value in rows:
        print(f"| {case} | {ours_value:.4g} | {ref_value:.4g} | {ours_value / ref_value:.3f} |")


PEAK_PROBE = """
import json, sys
sys.path.insert(0, {here!r})
{setup}

def peak_kib():
    return int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0])

open("/proc/self/clear_refs", "w").write("5")  # reset the peak (inherited from the parent and from the imports)
before = peak_kib()
{call}
print(json.dumps((peak_kib() - before) / 1024))
"""


def peak_memory_mib(setup: str, call: str) -> float:
    """Peak resident-set growth (Linux VmHWM) in MiB of the top-level code `call`, run after `setup` in a fresh
    Python process whose path includes this folder (so `setup` can import the benchmark modules)."""
    code = PEAK_PROBE.format(here=str(Path(__file__).parent), setup=setup, call=call)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return max(json.loads(out.stdout.strip().splitlines()[-1]), 0.01)
