"""L2 normalisation of each vector over the last dimension, times a constant: the delta rule's q and k.

    y = s · x · (Σ_c x_c² + ε)^(−1/2)

flash-linear-attention's `l2norm` (its delta-rule layers normalise q and k this way, ε = 1e-6), with the 1/√Dk
query scale folded in as s. It is RMSNorm with a constant weight: RMSNorm(x; ε/d) ⊙ w with w = s/√d is
x · w · √d / √(Σ x² + ε) = y. So on plain float32 CPU tensors it runs `rms_norm_numba`'s one-pass kernels (forward and
backward one pass over the rows each), where ATen's `F.normalize` is a norm, a clamp, an expand and a division whose
backward is about eight elementwise kernels over (B, T, H, D) (a fifth of a Gated DeltaNet mixer's step at the zoo
recipe's shape, AMD EPYC, one thread). Elsewhere the same formula runs in ATen ops; the two agree to float32 rounding
(`tests/test_mixers_delta_rule.py`).
"""

from __future__ import annotations

import torch

from .cpu_paths import compiled_backend

try:
    from .rms_norm_numba import NumbaRMSNorm
except ImportError:  # numba is missing: ATen ops
    NumbaRMSNorm = None

EPS = 1e-6  # flash-linear-attention's l2norm


def l2_normalize(x: torch.Tensor, scale: float = 1.0, eps: float = EPS) -> torch.Tensor:
    """s · x / √(Σ x² + ε) over the last dimension of x (..., d); same shape and dtype.

    Args:
        x (`torch.Tensor`): the vectors, any layout.
        scale (`float`): s, a constant (the query scale 1/√d for q).
        eps (`float`): ε, added to the sum of squares.
    """
    width = x.shape[-1]
    if x.dtype == torch.float32 and compiled_backend(NumbaRMSNorm is not None, x) == "numba":
        weight = x.new_full((width,), scale / width**0.5)  # a constant: its gradient is dropped
        return NumbaRMSNorm.apply(x, weight, eps / width)
    return x * torch.rsqrt(x.square().sum(-1, keepdim=True) + eps) * scale
