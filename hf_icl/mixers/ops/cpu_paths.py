"""When a hand-written CPU path (a numba kernel, a blocked `autograd.Function`) may replace the plain PyTorch one.

Those paths give first derivatives only and see plain tensors, so they step aside off the CPU and under functorch
transforms (`torch.func.vmap`, `jacrev`, `grad`: their tensors are wrapped, and a custom backward would drop the
batching or the higher derivatives). The plain expression next to each path is its oracle and runs there instead.
"""

from __future__ import annotations

import torch


def under_functorch(*tensors) -> bool:
    """True where any of `tensors` (`None` entries skipped) is wrapped by a functorch transform."""
    return any(torch._C._functorch.is_functorch_wrapped_tensor(t) for t in tensors if t is not None)


def on_cpu(*tensors) -> bool:
    """True where every one of `tensors` (`None` entries skipped) lives on the CPU."""
    return all(t.device.type == "cpu" for t in tensors if t is not None)


def plain_cpu_tensors(*tensors) -> bool:
    """True where a CPU-only path may take `tensors`: all on the CPU and none under a functorch transform."""
    return on_cpu(*tensors) and not under_functorch(*tensors)
