"""Shared timing helpers: warm-up, then the median of repeats; tables as `case | ours | reference | ratio`."""

from __future__ import annotations

import json
import os
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
    """Print one Markdown table; `rows` are (case, ours_value, reference_value[, ratio]) and the ratio, where a row
    does not give it (for example a median of per-round ratios, `median_ratio`), is ours / reference."""
    print(f"| case | {ours} ({unit}) | {reference} ({unit}) | ratio |")
    print("|---|---|---|---|")
    for case, ours_value, ref_value, *ratio in rows:
        ratio = ratio[0] if ratio else ours_value / ref_value
        print(f"| {case} | {ours_value:.4g} | {ref_value:.4g} | {ratio:.3f} |")


def median_ratio(numerators, denominators) -> float:
    """The median over rounds of numerator / denominator, each round's pair timed back to back.

    On a machine whose speed drifts (a shared VM drifts by 20-30 % over minutes), each side's best round can pair a
    fast moment of one side with a slow moment of the other; a round's ratio shares its moment, and the median of
    those ratios ignores a round that an outside burst hit.
    """
    ratios = [n / d for n, d in zip(numerators, denominators, strict=True)]
    return statistics.median(ratios)


def interleaved_cpu_times(steps: dict, rounds: int, repeats: int) -> dict[str, list[float]]:
    """`{label: [per-round median process CPU seconds]}` of each `steps[label]()`: every round times the sides back to
    back (one untimed call each first), so that `median_ratio` of two sides' lists pairs moments of one drift."""
    times = {label: [] for label in steps}
    for _ in range(rounds):
        for label, step in steps.items():
            times[label].append(median_time(step, repeats=repeats, warmup=1, clock="process"))
    return times


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


def numba_wide_vectors() -> bool | None:
    """Whether numba compiles for 512-bit vectors in this process (`hf_icl.utils.numba_vectors`); None without numba."""
    try:
        from numba.core import config
    except ImportError:
        return None
    return "-prefer-256-bit" in (config.CPU_FEATURES or "")


def machine_facts() -> dict:
    """What the numbers were measured on: the host as training runs record it (`hf_icl.training.provenance`: CPU
    model, family, AVX-512, AMX), cores, threads and library versions."""
    import os
    import platform

    import torch

    from hf_icl.training.provenance import machine_facts as host_facts

    host = host_facts()
    return {
        "cpu_model": host["cpu_model"] or "unknown",
        "cpu_family": host["cpu_family"],
        "cpu_cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "avx512": host["avx512"],
        "amx": host["amx"],
        "numba_wide_vectors": numba_wide_vectors(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def markdown_tables(text: str) -> list[dict]:
    """Every Markdown table in `text`, as `{"header": [...], "rows": [[...]]}` (cells as printed)."""
    tables, block = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            block.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif block:
            rows = [row for row in block[1:] if not all(set(cell) <= set("-: ") for cell in row)]
            tables.append({"header": block[0], "rows": rows})
            block = []
    return tables


class _Tee:
    def __init__(self, stream):
        self.stream, self.parts = stream, []

    def write(self, text):
        self.parts.append(text)
        return self.stream.write(text)

    def flush(self):
        self.stream.flush()


def check_architectures(parser, names) -> None:
    """Exit with argparse's one-line error where a name in `--architectures` is not a registered architecture."""
    import hf_icl

    known = hf_icl.list_architectures()
    unknown = [name for name in names if name not in known]
    if unknown:
        parser.error(f"argument --architectures: {unknown[0]!r} is not one of: {', '.join(known)}")


def add_output_argument(parser) -> None:
    parser.add_argument("--output", metavar="FILE", help="also write the printed tables and the machine facts as JSON")


def machine_was_idle(load_start: float, load_end: float, own_threads: int) -> bool:
    """Whether no other job shared the machine: the 1-minute load stayed below the benchmark's own threads + 0.5.
    The load average counts the benchmark itself (a one-thread benchmark of a minute or more ends near 1), and a
    benchmark run right after another starts with the other's decaying load, so "idle" is no load beyond our own."""
    return max(load_start, load_end) < own_threads + 0.5


def run_recorded(main) -> None:
    """Run a benchmark's `main()`; with `--output FILE` on the command line, write what it printed (its tables parsed),
    the command, the machine facts and the load average before and after to FILE as JSON."""
    import argparse
    import datetime
    import os

    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--output")
    known, _ = pre.parse_known_args()
    if not known.output:
        main()
        return
    load_start, started = os.getloadavg(), datetime.datetime.now(datetime.timezone.utc)
    tee = _Tee(sys.stdout)
    sys.stdout = tee
    try:
        main()
    finally:
        sys.stdout = tee.stream
    load_end = os.getloadavg()
    text, machine = "".join(tee.parts), machine_facts()
    env = " ".join(f"{k}={os.environ[k]}" for k in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS") if k in os.environ)
    record = {
        "benchmark": Path(sys.argv[0]).stem,
        "command": " ".join(filter(None, [env, "python", f"benchmarks/{Path(sys.argv[0]).name}", *sys.argv[1:]])),
        "started_utc": started.isoformat(timespec="seconds"),
        "seconds": round((datetime.datetime.now(datetime.timezone.utc) - started).total_seconds(), 1),
        "machine": machine,
        "load_average_1min": {"start": round(load_start[0], 2), "end": round(load_end[0], 2)},
        "idle": machine_was_idle(load_start[0], load_end[0], machine["torch_threads"]),
        "tables": markdown_tables(text),
        "output": text,
    }
    path = Path(known.output)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".tmp-{path.name}")
    tmp.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def with_scan_backend(step, backend: str):
    """`step` run with `HF_ICL_SCAN_BACKEND=backend` (hf_icl's compiled-kernel switch), restored after each call."""
    from hf_icl.mixers.ops.selective_scan import SCAN_BACKEND_ENV

    def run():
        previous = os.environ.get(SCAN_BACKEND_ENV)
        os.environ[SCAN_BACKEND_ENV] = backend
        try:
            step()
        finally:
            if previous is None:
                del os.environ[SCAN_BACKEND_ENV]
            else:
                os.environ[SCAN_BACKEND_ENV] = previous

    return run
