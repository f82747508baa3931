"""Token-shift mixes: each token interpolated with the previous one per channel, once per mixing vector (RWKV-7).

    out[m] = x_t + (x_{t−1} − x_t) ⊙ μ_m,   x_{−1} = the carried last input (zeros at the start)

On plain float32 CPU tensors (under `HF_ICL_SCAN_BACKEND`) the compiled kernels of `token_shift_numba` run each
direction in one pass; elsewhere the ATen expression below runs, and is their oracle (`tests/test_token_shift.py`).
"""

from __future__ import annotations

import torch

from .cpu_paths import compiled_backend

try:
    from .token_shift_numba import NumbaTokenShift
except ImportError:  # numba is missing: ATen ops
    NumbaTokenShift = None


def token_shift_mixes(x: torch.Tensor, last: torch.Tensor, mix: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The M mixes of x (B, T, d) with its shifted copy, M tensors (B, T, d), for mix (M, d) and the last input (B, d).

    Args:
        x (`torch.Tensor`): the tokens (B, T, d).
        last (`torch.Tensor`): x_{−1} (B, d), the input before the first token (a cache's, or zeros).
        mix (`torch.Tensor`): the mixing vectors μ (M, d).
    """
    same_dtype = x.dtype == last.dtype == mix.dtype == torch.float32
    if same_dtype and compiled_backend(NumbaTokenShift is not None, x, last, mix) == "numba":
        return NumbaTokenShift.apply(x, last, mix)
    previous = torch.cat([last[:, None], x[:, :-1]], dim=1)  # (B, T, d)
    return torch.addcmul(x, previous - x, mix[:, None, None, :]).unbind(0)  # M × (B, T, d)
