"""RMSNorm with a SiLU output gate, before or after the norm: Mamba-2's and Gated DeltaNet's output norm.

    gate first (Mamba-2, mamba-ssm's `RMSNormGated(norm_before_gate=False)`):   y = RMSNorm(x ⊙ SiLU(z)) ⊙ w
    norm first (Gated DeltaNet, fla's `FusedRMSNormGated`):                      y = RMSNorm(x) ⊙ w ⊙ SiLU(z)

On plain float32 CPU tensors (under `HF_ICL_SCAN_BACKEND`) the compiled kernels of `gated_rms_norm_numba` run each
direction in one pass over the rows; elsewhere the ATen expression below runs, and is their oracle
(`tests/test_gated_rms_norm.py`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .cpu_paths import compiled_backend

try:
    from .gated_rms_norm_numba import NumbaGatedRMSNorm
except ImportError:  # numba is missing: ATen ops
    NumbaGatedRMSNorm = None


def gated_rms_norm(x, gate, weight, eps: float, gate_first: bool) -> torch.Tensor:
    """The gated RMSNorm over the last dimension: x and gate (..., d) of one shape, weight (d,); x's shape.

    Args:
        x (`torch.Tensor`): the normalised input, any layout.
        gate (`torch.Tensor`): z, gated through SiLU.
        weight (`torch.Tensor`): the norm's gain w.
        eps (`float`): added to the mean square.
        gate_first (`bool`): gate before the norm (Mamba-2) or after it (Gated DeltaNet).
    """
    same_dtype = x.dtype == gate.dtype == weight.dtype == torch.float32
    if same_dtype and compiled_backend(NumbaGatedRMSNorm is not None, x, gate, weight) == "numba":
        return NumbaGatedRMSNorm.apply(x, gate, weight, eps, gate_first)
    width = (x.shape[-1],)
    if gate_first:
        return F.rms_norm(x * F.silu(gate), width, weight, eps)
    return F.rms_norm(x, width, weight, eps) * F.silu(gate)
