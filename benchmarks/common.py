"""Shared timing helpers: warm-up, then the median of repeats; tables as `case | ours | reference | ratio`."""

from __future__ import annotations

import statistics
import time


def median_time(fn, repeats: int = 5, warmup: int = 2) -> float:
    """Median wall time of `fn()` in seconds after `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def print_table(rows, unit: str = "s", ours: str = "ours", reference: str = "reference") -> None:
    """Print one Markdown table; `rows` are (case, ours_value, reference_value) and ratio = ours / reference."""
    print(f"| case | {ours} ({unit}) | {reference} ({unit}) | ratio |")
    print("|---|---|---|---|")
    for case, ours_value, ref_value in rows:
        print(f"| {case} | {ours_value:.4g} | {ref_value:.4g} | {ours_value / ref_value:.3f} |")
