"""Shared mixer primitives: the short causal convolution (pure path vs. streaming vs. the CUDA kernel)."""

import pytest
import torch

from hf_icl.mixers.ops import short_conv
from hf_icl.mixers.ops.short_conv import CausalDepthwiseConv
from hf_icl.modeling.cache import MixerState


def naive_causal_conv(x, conv):
    """y_t = Σ_j w_j x_{t−k+1+j} + b, with zeros before the start."""
    weight, bias = conv.conv.weight[:, 0], conv.conv.bias  # (C, k), (C,)
    k = weight.shape[1]
    padded = torch.cat([x.new_zeros(x.shape[0], k - 1, x.shape[2]), x], dim=1)  # (B, k−1+T, C)
    return torch.stack([(padded[:, t : t + k] * weight.T).sum(1) + bias for t in range(x.shape[1])], dim=1)


@pytest.mark.parametrize("kernel_size", [1, 3, 4])
def test_short_conv_matches_definition_and_streams(kernel_size):
    torch.manual_seed(0)
    conv = CausalDepthwiseConv(5, kernel_size)
    x = torch.randn(2, 9, 5)
    with torch.no_grad():
        full = conv(x)
        torch.testing.assert_close(full, naive_causal_conv(x, conv), atol=1e-6, rtol=0)
        state = MixerState()
        pieces = [conv(x[:, :4], state)] + [conv(x[:, t : t + 1], state) for t in range(4, 9)]
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, atol=1e-6, rtol=0)
    assert state.get("conv_window").shape == (2, kernel_size - 1, 5)


@pytest.mark.parametrize("kernel_size", [1, 4])
@pytest.mark.parametrize("length", [1, 2, 9])  # shorter than the kernel too
def test_short_conv_gradients_match_conv1d(kernel_size, length):
    # The pure path is k shifted multiply-adds with a hand-written backward; PyTorch's conv1d is the oracle.
    torch.manual_seed(0)
    conv = CausalDepthwiseConv(5, kernel_size).double()
    x = torch.randn(2, length, 5, dtype=torch.float64)
    grads = []
    for form in ("shifted", "conv1d"):
        leaf = x.clone().requires_grad_()
        if form == "shifted":
            out = conv(leaf)
        else:
            padded = torch.cat([leaf.new_zeros(2, kernel_size - 1, 5), leaf], dim=1)
            out = conv.conv(padded.transpose(1, 2)).transpose(1, 2)
        out.sin().sum().backward()
        grads.append([out, leaf.grad, conv.conv.weight.grad.clone(), conv.conv.bias.grad.clone()])
        conv.zero_grad()
    for ours, ref in zip(*grads):
        torch.testing.assert_close(ours, ref)


@pytest.mark.skipif(
    short_conv.causal_conv1d_fn is None or not torch.cuda.is_available(),
    reason="the causal-conv1d kernel needs CUDA and the causal-conv1d package",
)
def test_causal_conv1d_kernel_matches_pure_path():  # pragma: no cover - CUDA only
    torch.manual_seed(0)
    conv = CausalDepthwiseConv(64, 4).cuda()
    x = torch.randn(2, 100, 64, device="cuda")
    with torch.no_grad():
        fast = conv(x)
        pure = conv.conv(torch.cat([x.new_zeros(2, 3, 64), x], 1).transpose(1, 2)).transpose(1, 2)
    torch.testing.assert_close(fast, pure, atol=1e-5, rtol=1e-5)
