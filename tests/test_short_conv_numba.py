"""The compiled (numba) short depthwise convolution ≡ the torch form `ShiftedDepthwiseConv` (its oracle) and
PyTorch's `conv1d` in float64: values and gradients of x, weight and bias, over shapes, kernel sizes and implicit
left zeros; the dispatch (`short_conv.depthwise_conv`) and whole Mamba and H3 models under both backends."""

import pytest

pytest.importorskip("numba")

import torch  # noqa: E402
from backend_oracle import assert_model_agrees_under_both_backends  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from hf_icl.mixers.ops import short_conv  # noqa: E402
from hf_icl.mixers.ops.selective_scan import SCAN_BACKEND_ENV  # noqa: E402
from hf_icl.mixers.ops.short_conv import ShiftedDepthwiseConv, depthwise_conv  # noqa: E402
from hf_icl.mixers.ops.short_conv_numba import NumbaShortConv  # noqa: E402


def conv1d_reference(x, weight, bias, left_zeros):
    """PyTorch's depthwise conv1d on x (B, S, C) preceded by `left_zeros` zeros, (B, S + z − k + 1, C)."""
    padded = torch.nn.functional.pad(x.transpose(1, 2), (left_zeros, 0))  # (B, C, z + S)
    return torch.nn.functional.conv1d(padded, weight[:, None], bias, groups=x.shape[2]).transpose(1, 2)


def value_and_grads(form, x, weight, bias, left_zeros, upstream):
    leaves = [t.detach().clone().requires_grad_() if t is not None else None for t in (x, weight, bias)]
    out = form(*leaves, left_zeros)
    wanted = [t for t in leaves if t is not None]
    return (out, *torch.autograd.grad((out * upstream).sum(), wanted))


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    batch=st.integers(1, 3),
    length=st.integers(1, 30),
    channels=st.integers(1, 20),
    kernel=st.integers(1, 5),
    data=st.data(),
    with_bias=st.booleans(),
)
def test_compiled_conv_equals_the_torch_form_and_conv1d(seed, batch, length, channels, kernel, data, with_bias):
    left_zeros = data.draw(st.integers(max(0, kernel - length), kernel - 1), label="left_zeros")
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, length, channels, generator=generator)
    weight = torch.randn(channels, kernel, generator=generator)
    bias = torch.randn(channels, generator=generator) if with_bias else None
    upstream = torch.randn(batch, length + left_zeros - kernel + 1, channels, generator=generator)
    ours = value_and_grads(NumbaShortConv.apply, x, weight, bias, left_zeros, upstream)
    torch_form = value_and_grads(ShiftedDepthwiseConv.apply, x, weight, bias, left_zeros, upstream)
    double = [t.double() if t is not None else None for t in (x, weight, bias)]
    exact = value_and_grads(conv1d_reference, *double, left_zeros, upstream.double())
    assert len(ours) == len(exact) == 3 + with_bias
    for value, oracle, reference in zip(ours, torch_form, exact):
        assert value.dtype == torch.float32 and value.shape == oracle.shape
        torch.testing.assert_close(value, oracle, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(value.double(), reference, atol=1e-5, rtol=1e-5)


def test_non_contiguous_input_and_weight():
    generator = torch.Generator().manual_seed(1)
    wide = torch.randn(2, 9, 12, generator=generator)
    x = wide[..., ::2]  # (2, 9, 6), strided channels
    weight = torch.randn(4, 6, generator=generator).t()  # (6, 4), transposed
    bias = torch.randn(6, generator=generator)
    expected = ShiftedDepthwiseConv.apply(x, weight, bias, 3)
    torch.testing.assert_close(NumbaShortConv.apply(x, weight, bias, 3), expected)


def test_dispatch_takes_the_kernel_only_where_it_applies(monkeypatch):
    calls = []

    class Spy:
        @staticmethod
        def apply(*args):
            calls.append(1)
            return NumbaShortConv.apply(*args)

    monkeypatch.setattr(short_conv, "NumbaShortConv", Spy)
    x, weight = torch.randn(2, 7, 3), torch.randn(3, 4)
    depthwise_conv(x, weight, None, 3)
    assert calls == [1]
    depthwise_conv(x.double(), weight.double(), None, 3)  # float64: the torch form
    monkeypatch.setenv(SCAN_BACKEND_ENV, "torch")
    depthwise_conv(x, weight, None, 3)
    assert calls == [1]


@pytest.mark.parametrize("architecture", ["mamba", "h3"])
def test_a_model_trains_the_same_under_both_backends(monkeypatch, architecture):
    assert_model_agrees_under_both_backends(monkeypatch, architecture)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 1000), length=st.integers(1, 12), kernel=st.integers(1, 4), split=st.integers(0, 12))
def test_skip_folded_into_the_current_tap_equals_conv_plus_skip(seed, length, kernel, split):
    """`CausalDepthwiseConv(x, skip=D)` ≡ conv(x) + D ⊙ x, values and gradients of x, the taps and D, over a whole
    sequence without a cache and continued through a cached window (a prefix, then the rest)."""
    from hf_icl.modeling.cache import MixerState

    gen = torch.Generator().manual_seed(seed)
    conv = short_conv.CausalDepthwiseConv(5, kernel, bias=False)
    x = torch.randn(2, length, 5, generator=gen, requires_grad=True)
    skip = torch.randn(5, generator=gen, requires_grad=True)
    cotangent = torch.randn(2, length, 5, generator=gen)
    split = min(split, length)

    def run(fold):
        state = MixerState() if split else None  # split = 0: the uncached path
        parts = [x[:, :split], x[:, split:]] if split else [x]
        outs = [conv(part, state, skip=skip) if fold else conv(part, state) + skip * part for part in parts]
        out = torch.cat(outs, dim=1)
        return (out, *torch.autograd.grad(out, (x, conv.conv.weight, skip), cotangent))

    for folded, plain in zip(run(True), run(False)):
        torch.testing.assert_close(folded, plain, atol=1e-5, rtol=1e-5)
