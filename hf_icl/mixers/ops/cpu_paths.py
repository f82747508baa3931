"""When a hand-written CPU path (a numba kernel, a blocked `autograd.Function`) may replace the plain PyTorch one.

Those paths give first derivatives only and see plain tensors, so they step aside off the CPU and under functorch
transforms (`torch.func.vmap`, `jacrev`, `grad`: their tensors are wrapped, and a custom backward would drop the
batching or the higher derivatives). The plain expression next to each path is its oracle and runs there instead.
"""

from __future__ import annotations

import os

import torch

SCAN_BACKEND_ENV = "HF_ICL_SCAN_BACKEND"
SCAN_BACKENDS = ("auto", "numba", "torch")


def under_functorch(*tensors) -> bool:
    """True where any of `tensors` (`None` entries skipped) is wrapped by a functorch transform."""
    return any(torch._C._functorch.is_functorch_wrapped_tensor(t) for t in tensors if t is not None)


def on_cpu(*tensors) -> bool:
    """True where every one of `tensors` (`None` entries skipped) lives on the CPU."""
    return all(t.device.type == "cpu" for t in tensors if t is not None)


def plain_cpu_tensors(*tensors) -> bool:
    """True where a CPU-only path may take `tensors`: all on the CPU and none under a functorch transform."""
    return on_cpu(*tensors) and not under_functorch(*tensors)


def compiled_backend(kernel_available: bool, *tensors) -> str:
    """`"numba"` or `"torch"`: the path a numba kernel's caller takes for `tensors` under `HF_ICL_SCAN_BACKEND`.

    `auto` (default) takes the kernel where it imported and every tensor is a plain CPU tensor, `torch` never,
    `numba` always (raising where it cannot). Read at each call.

    Args:
        kernel_available (`bool`): the kernel imported (numba is installed).
        *tensors (`torch.Tensor` or `None`): the kernel's inputs (`None` entries skipped).
    """
    requested = os.environ.get(SCAN_BACKEND_ENV, "auto").strip().lower() or "auto"
    if requested not in SCAN_BACKENDS:
        raise ValueError(f"{SCAN_BACKEND_ENV}={requested!r} is not one of: {', '.join(map(repr, SCAN_BACKENDS))}")
    if requested == "torch":
        return "torch"
    if requested == "numba":
        if not kernel_available:
            raise ImportError(f"{SCAN_BACKEND_ENV}='numba' needs numba (pip install numba); or set 'torch' or 'auto'")
        if not on_cpu(*tensors):
            raise ValueError(f"{SCAN_BACKEND_ENV}='numba' runs on the CPU only; the tensors are not all on the CPU")
        return "numba"
    return "numba" if kernel_available and plain_cpu_tensors(*tensors) else "torch"
