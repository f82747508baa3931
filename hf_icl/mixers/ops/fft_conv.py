"""Causal long convolution by FFT (paper 1, Appendix A.9 eq. 76 and A.11 eq. 88; Hyena, Poli et al. 2023, §3.3).

    y_t = Σ_{j ≤ t} K_{t−j} u_j        for every channel independently

Both signals are zero-padded to length 2T before the real FFT, so the circular convolution equals the linear
(causal) one on the first T outputs: O(T log T) per channel instead of O(T²).
"""

from __future__ import annotations

import torch


def causal_fft_conv(u: torch.Tensor, kernel: torch.Tensor, channels_first_kernel: bool = False) -> torch.Tensor:
    """Causal per-channel convolution of `u` with `kernel` along time.

    Args:
        u (`torch.Tensor`): input (B, T, *C): time is dim 1, any number of channel dims after it.
        kernel (`torch.Tensor`): filter (L, *C) with L ≥ 1 (entries beyond T are unused, missing ones are zero);
            (*C, L) when `channels_first_kernel`. Its channel dims must broadcast against those of `u`.
        channels_first_kernel (`bool`): the kernel's time axis is its last dim instead of its first.

    Returns:
        (B, T, *C) output in the dtype of `u`, computed in float32 at least.
    """
    if channels_first_kernel:
        kernel = kernel.movedim(-1, 0)  # (L, *C)
    length = u.shape[1]
    kernel = kernel[:length]
    n = 2 * length
    compute = torch.promote_types(u.dtype, torch.float32)
    u_f = torch.fft.rfft(u.to(compute), n=n, dim=1)  # (B, T+1, *C)
    k_f = torch.fft.rfft(kernel.to(compute), n=n, dim=0)  # (T+1, *C)
    return torch.fft.irfft(u_f * k_f, n=n, dim=1)[:, :length].to(u.dtype)  # (B, T, *C)
