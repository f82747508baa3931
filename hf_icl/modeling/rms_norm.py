"""`RMSNorm`: `torch.nn.RMSNorm` with the compiled CPU kernel of `mixers.ops.rms_norm_numba` where it applies.

The kernel takes float32 CPU tensors with a weight where `HF_ICL_SCAN_BACKEND` (`auto`, `numba` or `torch`) allows
the compiled path; everything else (CUDA, bf16 autocast, float64, functorch transforms, numba missing) runs
`torch.nn.RMSNorm`'s own forward. The parameters and their names are `nn.RMSNorm`'s, so checkpoints are the same.
Like the package's other numba kernels it gives first derivatives only: for higher-order gradients set
`HF_ICL_SCAN_BACKEND=torch`.
"""

from __future__ import annotations

import torch
from torch import nn

from ..mixers.ops.cpu_paths import compiled_backend

try:
    from ..mixers.ops.rms_norm_numba import NumbaRMSNorm
except ImportError:  # numba is missing: ATen's composition
    NumbaRMSNorm = None


class RMSNorm(nn.RMSNorm):
    """Root-mean-square norm over the last dimension, `w ⊙ x / sqrt(mean(x²) + eps)`, on the fastest exact CPU path.

    Args:
        normalized_shape (`int`): the width d.
        eps (`float`): added to the mean square.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        compiled = NumbaRMSNorm is not None and self.weight is not None and self.eps is not None
        if (
            compiled
            and x.dtype == torch.float32
            and self.weight.dtype == torch.float32
            and len(self.normalized_shape) == 1
        ):
            if compiled_backend(True, x, self.weight) == "numba":
                return NumbaRMSNorm.apply(x, self.weight, self.eps)
        return super().forward(x)
