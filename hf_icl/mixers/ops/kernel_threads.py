"""Run a compiled CPU kernel (numba, `nogil=True`) on as many threads as PyTorch uses, over slices of its rows.

The package's numba kernels are single-threaded, while the PyTorch operations around them use every intra-op
thread: on two threads a training step spends its GELU, RMSNorm and n-gram sums on one core and leaves the other
idle. `run_in_slices` cuts the arrays along their first axis into `torch.get_num_threads()` contiguous slices and
runs the kernel on each slice in its own thread (the calling thread takes the last one); numba releases the GIL, so
the slices run at once. Kernels whose rows are independent give the same result bit for bit. Small inputs (below
`MIN_ELEMENTS`) and one thread run the kernel once, in the caller.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

MIN_ELEMENTS = 1 << 17  # below this a kernel call is too short to be worth a hand-over to another thread
_pool: tuple[int, ThreadPoolExecutor] | None = None  # (pid, pool): a forked child builds its own


def _workers(count: int) -> ThreadPoolExecutor:
    global _pool
    if _pool is None or _pool[0] != os.getpid() or _pool[1]._max_workers < count:
        _pool = (os.getpid(), ThreadPoolExecutor(max_workers=count, thread_name_prefix="hf_icl-kernel"))
    return _pool[1]


def slice_bounds(rows: int, parts: int) -> list[tuple[int, int]]:
    """`parts` contiguous, non-empty (start, stop) ranges covering `rows` rows, as even as possible."""
    edges = np.linspace(0, rows, min(parts, rows) + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:]) if b > a]


def thread_count(elements: int) -> int:
    """How many slices a kernel over `elements` elements is cut into (1: run it once)."""
    return 1 if elements < MIN_ELEMENTS else max(1, torch.get_num_threads())


def run_sliced(call, rows: int, parts: int) -> None:
    """`call(part, start, stop)` for each of `parts` contiguous slices of `rows` rows, concurrently (the calling
    thread takes the last slice). `call` should spend its time in numba kernels compiled with `nogil=True`."""
    bounds = slice_bounds(rows, parts)
    if len(bounds) <= 1:
        call(0, 0, rows)
        return
    pool = _workers(len(bounds) - 1)
    futures = [pool.submit(call, part, lo, hi) for part, (lo, hi) in enumerate(bounds[:-1])]
    call(len(bounds) - 1, *bounds[-1])
    for future in futures:
        future.result()


def run_in_slices(kernel, arrays: list[np.ndarray], extra=(), parts: int | None = None) -> None:
    """`kernel(*row_slices, *extra)` for each slice of the rows of `arrays` (all of the same length), concurrently.

    Args:
        kernel: a numba function compiled with `nogil=True` whose rows are independent.
        arrays: arrays sliced along axis 0 (inputs and outputs alike).
        extra: arguments passed whole to every call (scalars, shared read-only arrays).
        parts: the number of slices; default `thread_count` of the first array's size.
    """
    parts = thread_count(arrays[0].size) if parts is None else parts
    run_sliced(lambda part, lo, hi: kernel(*(a[lo:hi] for a in arrays), *extra), arrays[0].shape[0], parts)
