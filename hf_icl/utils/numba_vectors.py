"""512-bit SIMD for hf_icl's numba kernels on AVX-512 CPUs (applied by `import hf_icl`).

LLVM vectorises for 256-bit registers on Intel server cores even where they have AVX-512: their tuning carries the
`prefer-256-bit` feature (https://reviews.llvm.org/D67259), so numba's `@njit` loops run on 256-bit ymm registers,
half the width the CPU has. The compiled CPU kernels of hf_icl (selective scan, short convolution, GELU, WKV,
Baum–Welch) are such loops over channels. `benchmarks/cpu_kernels.py` compiles the selective scan both ways, in
alternating child processes, at Mamba `tiny`'s B = 64, T = 82, D = 128, N = 16 (docs/benchmarks.md: about 1.2-1.5x
forward and backward on the Xeon this was written on); the training steps of the other benchmarks are there too.
numba's own test suite disables the preference the same way (numba PR #5757).

numba reads the CPU features once, from `numba.core.config.CPU_FEATURES` (the `NUMBA_CPU_FEATURES` environment
variable), when it creates its target machine at its first compilation in the process. `use_wide_vectors` sets
that configuration value, in this process only, to the host's features (as numba itself would compute them) plus
`-prefer-256-bit`, and only when

- the host has AVX-512 (`avx512f`; elsewhere there is nothing to widen),
- numba has compiled nothing yet in this process (its target machine would be fixed already), and
- the user has not set `NUMBA_CPU_FEATURES` or `NUMBA_CPU_NAME` (their choice wins; `NUMBA_CPU_FEATURES=""` keeps
  numba's defaults and so turns this off).

No environment variable is written: a child process, or a job a launcher sends to another machine, decides for its
own host when it imports hf_icl.

The results are the same maths: floating-point sums that numba may reorder (`reassoc`) are split into different
partial sums, so values differ at rounding level; every kernel's test compares with its torch oracle at tolerance.
"""

from __future__ import annotations

import os

PREFER_NARROW = "prefer-256-bit"


def wide_vector_features() -> str | None:
    """The host's LLVM feature string without the 256-bit preference, or None where the host has no AVX-512."""
    try:
        from llvmlite import binding
    except ImportError:  # numba (and its llvmlite) not installed: the torch paths run
        return None
    features = binding.get_host_cpu_features()
    if not features.get("avx512f", False):
        return None
    return f"{features.flatten()},-{PREFER_NARROW}"


def use_wide_vectors() -> bool:
    """Set numba's CPU features for 512-bit vectors where the module docstring's conditions hold; True if it did."""
    if "NUMBA_CPU_FEATURES" in os.environ or "NUMBA_CPU_NAME" in os.environ:
        return False
    try:
        from numba.core import config, registry
    except ImportError:  # numba not installed: the torch paths run
        return False
    if "_toplevel_target_context" in vars(registry.cpu_target):  # created at numba's first compilation
        return False
    features = wide_vector_features()
    if features is None:
        return False
    config.CPU_FEATURES = features
    return True


use_wide_vectors()
