"""Short causal depthwise convolution with a cached window (Mamba's conv1d, H3's shift SSM, Hyena's short filters).

Parallel form: the sequence, left-padded with the cached window (zeros at the start), convolved as k shifted
multiply-adds on the (B, T, C) layout (`ShiftedDepthwiseConv`); PyTorch's depthwise `conv1d` needs (B, C, T)
copies both ways and its CPU backward was ~8× slower here (Mamba, B=8, T=384, C=256). Recurrent form: the cache
keeps the last `kernel_size − 1` inputs per channel, so each new token costs O(kernel_size · C). On CUDA the
`causal-conv1d` kernel is used when it imports; on the CPU, float32 runs the compiled kernel of
`short_conv_numba` (one pass each way instead of about 4k) where `HF_ICL_SCAN_BACKEND` allows numba
(`depthwise_conv`), with `ShiftedDepthwiseConv` as its oracle.
"""

from __future__ import annotations

import torch
from torch import nn

from .selective_scan import scan_backend

try:
    from .short_conv_numba import NumbaShortConv
except ImportError:  # numba is missing: the torch form
    NumbaShortConv = None

try:  # pragma: no cover - CUDA only
    from causal_conv1d import causal_conv1d_fn
except Exception:  # ImportError, or a CUDA extension that fails to load on a CPU-only machine
    causal_conv1d_fn = None


class ShiftedDepthwiseConv(torch.autograd.Function):
    """`y_t = b + Σ_j w_j ⊙ x_{t−k+1+j}` over (B, T, C), as k shifted `addcmul`s, with its backward
    `dx_s = Σ_j w_j ⊙ dy_{s+k−1−j}`, `dw_j = Σ_{b,t} dy_t ⊙ x_{t−k+1+j}`, `db = Σ_{b,t} dy_t`.

    forward(x (B, S, C), weight (C, k), bias (C,) or None, left_zeros) → (B, S + left_zeros − k + 1, C): x is
    preceded by `left_zeros` implicit zeros (k − 1 for a sequence start, 0 when a cached window leads x).
    """

    @staticmethod
    def forward(ctx, x, weight, bias, left_zeros):
        kernel = weight.shape[1]
        length = x.shape[1] + left_zeros - kernel + 1
        # tap j = left_zeros reads x_t itself (no shift) and covers every output: it starts the sum
        out = (
            x[:, :length] * weight[:, left_zeros]
            if bias is None
            else torch.addcmul(bias, x[:, :length], weight[:, left_zeros])
        )
        for j in range(kernel):
            shift = left_zeros - j  # output t reads input t − shift
            if j != left_zeros and shift < length:
                out[:, max(shift, 0) :].addcmul_(x[:, max(-shift, 0) : length - shift], weight[:, j])
        ctx.save_for_backward(x, weight)
        ctx.left_zeros, ctx.has_bias = left_zeros, bias is not None
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, weight = ctx.saved_tensors
        kernel, length = weight.shape[1], grad_out.shape[1]
        grad_x = torch.zeros_like(x) if ctx.needs_input_grad[0] else None
        grad_weight = weight.new_empty(weight.shape) if ctx.needs_input_grad[1] else None
        for j in range(kernel):
            shift = ctx.left_zeros - j
            if shift >= length:  # tap j only ever reads the implicit zeros
                if grad_weight is not None:
                    grad_weight[:, j] = 0.0
                continue
            start = max(shift, 0)
            taps = slice(start - shift, length - shift)  # the inputs tap j reads, for outputs start..
            if grad_x is not None:
                grad_x[:, taps].addcmul_(grad_out[:, start:], weight[:, j])
            if grad_weight is not None:
                grad_weight[:, j] = (grad_out[:, start:] * x[:, taps]).sum((0, 1))
        grad_bias = grad_out.sum((0, 1)) if ctx.has_bias and ctx.needs_input_grad[2] else None
        return grad_x, grad_weight, grad_bias, None


def depthwise_conv(x, weight, bias, left_zeros: int) -> torch.Tensor:
    """`ShiftedDepthwiseConv`'s contract, run by the compiled CPU kernel for float32 where `scan_backend` allows
    numba, by the torch form otherwise."""
    if NumbaShortConv is not None and x.dtype == weight.dtype == torch.float32 and scan_backend(x, weight) == "numba":
        return NumbaShortConv.apply(x, weight, bias, left_zeros)
    return ShiftedDepthwiseConv.apply(x, weight, bias, left_zeros)


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

    def forward(self, x: torch.Tensor, state=None, name: str = "conv_window", skip=None) -> torch.Tensor:
        """Convolve `x` (B, T, C) causally; with a `MixerState`, continue from and update its window `name`. With
        `skip` (C,), add skip ⊙ x_t: folded into the current token's tap, w_{k−1} + skip, so no extra pass runs."""
        window = state.get(name) if state is not None else None  # (B, k−1, C)
        weight = self.conv.weight[:, 0]  # (C, k)
        if skip is not None:
            weight = torch.cat([weight[:, :-1], (weight[:, -1] + skip)[:, None]], dim=1)
        use_kernel = causal_conv1d_fn is not None and x.is_cuda and window is None
        if use_kernel:  # pragma: no cover - CUDA only
            out = causal_conv1d_fn(x.transpose(1, 2), weight, self.conv.bias).transpose(1, 2)
        if window is None and state is None and not use_kernel:  # a sequence start: implicit zeros, no copy
            return depthwise_conv(x, weight, self.conv.bias, self.kernel_size - 1)  # (B, T, C)
        if window is None:
            window = x.new_zeros(x.shape[0], self.kernel_size - 1, x.shape[2])
        extended = torch.cat([window, x], dim=1)  # (B, k−1+T, C)
        if state is not None:
            state.set(name, extended[:, extended.shape[1] - (self.kernel_size - 1) :])
        if use_kernel:  # pragma: no cover - CUDA only
            return out
        return depthwise_conv(extended, weight, self.conv.bias, 0)  # (B, T, C)
