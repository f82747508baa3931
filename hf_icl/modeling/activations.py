"""Activations of the feed-forward nets: transformers' `ACT2FN`, with a compiled CPU kernel for the tanh-GELU.

`gelu_pytorch_tanh` (GPT-2's GELU, the default of `ICLConfig`) runs :class:`GELUTanh`: the numba kernel of
`mixers.ops.gelu_numba` for float32 CPU tensors where `HF_ICL_SCAN_BACKEND` (`auto`, `numba` or `torch`) allows
the compiled path, and ATen's `gelu(approximate="tanh")` everywhere else (CUDA, bf16 autocast, float64, functorch
transforms, numba missing). Both compute the same function; the kernel is checked against ATen's, not an
approximation of it. Like the package's other numba kernels it gives first derivatives only: for higher-order
gradients set `HF_ICL_SCAN_BACKEND=torch`. Every other name is `ACT2FN[name]`.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers.activations import ACT2FN

from ..mixers.ops.cpu_paths import compiled_backend

try:
    from ..mixers.ops.gelu_numba import NumbaGELUTanh
except ImportError:  # numba is missing: ATen's kernel
    NumbaGELUTanh = None


class GELUTanh(nn.Module):
    """GPT-2's tanh-approximated GELU, ½x(1 + tanh(√(2/π)(x + 0.044715x³))), on the fastest exact CPU path."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if NumbaGELUTanh is not None and x.dtype == torch.float32 and compiled_backend(True, x) == "numba":
            return NumbaGELUTanh.apply(x)
        return nn.functional.gelu(x, approximate="tanh")


COMPILED_ACTIVATIONS = {"gelu_pytorch_tanh": GELUTanh}


def build_activation(name: str) -> nn.Module:
    """The activation module called `name` in transformers' `ACT2FN`, or its compiled CPU equivalent."""
    if name in COMPILED_ACTIVATIONS:
        return COMPILED_ACTIVATIONS[name]()
    return ACT2FN[name]
