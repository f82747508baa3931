"""Short causal depthwise convolution with a cached window (Mamba's conv1d, H3's shift SSM, Hyena's short filters).

Parallel form: one `conv1d` over the sequence, left-padded with the cached window (zeros at the start). Recurrent
form: the cache keeps the last `kernel_size − 1` inputs per channel, so each new token costs O(kernel_size · C).
On CUDA the `causal-conv1d` kernel is used when it imports.
"""

from __future__ import annotations

import torch
from torch import nn

try:  # pragma: no cover - CUDA only
    from causal_conv1d import causal_conv1d_fn
except Exception:  # ImportError, or a CUDA extension that fails to load on a CPU-only machine
    causal_conv1d_fn = None


class CausalDepthwiseConv(nn.Module):
    """Depthwise causal convolution over time, per channel: `y_t = Σ_{j<k} w_j x_{t−k+1+j} (+ b)`.

    Args:
        channels (`int`): number of channels C (each has its own filter).
        kernel_size (`int`): filter length k.
        bias (`bool`): add a learned bias per channel.
    """

    def __init__(self, channels: int, kernel_size: int, bias: bool = True):
        super().__init__()
        self.kernel_size = kernel_size
        self.conv = nn.Conv1d(channels, channels, kernel_size, groups=channels, bias=bias)

    def state_bytes(self, dtype=torch.float32) -> int:
        """Bytes of the cached window per sequence."""
        return (self.kernel_size - 1) * self.conv.in_channels * torch.finfo(dtype).bits // 8

    def forward(self, x: torch.Tensor, state=None, name: str = "conv_window") -> torch.Tensor:
        """Convolve `x` (B, T, C) causally; with a `MixerState`, continue from and update its window `name`."""
        window = state.get(name) if state is not None else None  # (B, k−1, C)
        use_kernel = causal_conv1d_fn is not None and x.is_cuda and window is None
        if use_kernel:  # pragma: no cover - CUDA only
            out = causal_conv1d_fn(x.transpose(1, 2), self.conv.weight.squeeze(1), self.conv.bias).transpose(1, 2)
        if window is None:
            window = x.new_zeros(x.shape[0], self.kernel_size - 1, x.shape[2])
        extended = torch.cat([window, x], dim=1)  # (B, k−1+T, C)
        if state is not None:
            state.set(name, extended[:, extended.shape[1] - (self.kernel_size - 1) :])
        if use_kernel:  # pragma: no cover - CUDA only
            return out
        return self.conv(extended.transpose(1, 2)).transpose(1, 2)  # (B, T, C)
