"""The compiled (numba) tanh-GELU ≡ ATen's `gelu(approximate="tanh")` and the float64 formula, values and
gradients, over random shapes and scales up to saturation; the dispatch (`modeling.activations.GELUTanh`) and a
whole Transformer under both backends."""

import math

import pytest

pytest.importorskip("numba")

import torch  # noqa: E402
from backend_oracle import assert_model_agrees_under_both_backends  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import hf_icl  # noqa: E402
from hf_icl.mixers.ops.gelu_numba import NumbaGELUTanh  # noqa: E402
from hf_icl.mixers.ops.selective_scan import SCAN_BACKEND_ENV  # noqa: E402
from hf_icl.modeling import activations  # noqa: E402
from hf_icl.modeling.activations import GELUTanh, build_activation  # noqa: E402


def gelu_tanh_float64(x: torch.Tensor) -> torch.Tensor:
    """The formula as GPT-2 writes it, in float64: ½x(1 + tanh(√(2/π)(x + 0.044715x³)))."""
    x = x.double()
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def value_and_grad(fn, x, weights):
    leaf = x.detach().clone().requires_grad_()
    out = fn(leaf)
    (grad,) = torch.autograd.grad((out * weights).sum(), leaf)
    return out.detach(), grad


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    shape=st.lists(st.integers(1, 40), min_size=1, max_size=3),
    scale=st.sampled_from([0.1, 1.0, 4.0, 30.0]),
)
def test_compiled_gelu_equals_aten_and_the_float64_formula(seed, shape, scale):
    generator = torch.Generator().manual_seed(seed)
    x = scale * torch.randn(shape, generator=generator)
    weights = torch.randn(shape, generator=generator)
    ours, ours_grad = value_and_grad(NumbaGELUTanh.apply, x, weights)
    aten, aten_grad = value_and_grad(lambda t: torch.nn.functional.gelu(t, approximate="tanh"), x, weights)
    exact, exact_grad = value_and_grad(gelu_tanh_float64, x.double(), weights.double())
    assert ours.dtype == torch.float32 and ours.shape == x.shape
    torch.testing.assert_close(ours, aten, atol=2e-6, rtol=2e-6)
    torch.testing.assert_close(ours_grad, aten_grad, atol=2e-5, rtol=2e-5)
    torch.testing.assert_close(ours.double(), exact, atol=2e-6, rtol=2e-6)
    torch.testing.assert_close(ours_grad.double(), exact_grad, atol=2e-5, rtol=2e-5)


def test_saturated_inputs_take_the_limits_and_non_contiguous_inputs_work():
    x = torch.tensor([-1e30, -200.0, -20.0, 0.0, 20.0, 200.0, 1e30, float("inf"), float("-inf")])
    out, grad = value_and_grad(NumbaGELUTanh.apply, x, torch.ones_like(x))
    torch.testing.assert_close(out[:7], torch.tensor([0.0, 0.0, 0.0, 0.0, 20.0, 200.0, 1e30]))
    torch.testing.assert_close(grad[:7], torch.tensor([0.0, 0.0, 0.0, 0.5, 1.0, 1.0, 1.0]))
    aten = torch.nn.functional.gelu(x[7:], approximate="tanh")  # inf and NaN (−inf · 0), as ATen
    torch.testing.assert_close(out[7:], aten, equal_nan=True)
    wide = torch.randn(6, 10, generator=torch.Generator().manual_seed(3))
    torch.testing.assert_close(NumbaGELUTanh.apply(wide.t()), torch.nn.functional.gelu(wide.t(), approximate="tanh"))


def test_dispatch_takes_the_kernel_only_where_it_applies(monkeypatch):
    calls = []

    class Spy:
        @staticmethod
        def apply(x):
            calls.append(1)
            return NumbaGELUTanh.apply(x)

    monkeypatch.setattr(activations, "NumbaGELUTanh", Spy)
    act = build_activation("gelu_pytorch_tanh")
    assert isinstance(act, GELUTanh)
    x = torch.randn(4, 8)
    act(x)
    assert calls == [1]
    act(x.double())  # float64: ATen
    act(x.bfloat16())  # bf16 (autocast): ATen
    monkeypatch.setenv(SCAN_BACKEND_ENV, "torch")
    torch.testing.assert_close(act(x), torch.nn.functional.gelu(x, approximate="tanh"))
    assert calls == [1]
    assert not isinstance(build_activation("gelu"), GELUTanh)  # other names: transformers' ACT2FN


def test_a_transformer_trains_the_same_under_both_backends(monkeypatch):
    assert hf_icl.config_for("transformer", "tiny").hidden_act == "gelu_pytorch_tanh"
    model = assert_model_agrees_under_both_backends(monkeypatch, "transformer", loss_tolerance=1e-6)
    assert any(isinstance(module, GELUTanh) for module in model.modules())


@settings(max_examples=50, deadline=None)
@given(rows=st.integers(0, 10_000), parts=st.integers(1, 8))
def test_slices_cover_the_rows_once_in_order(rows, parts):
    from hf_icl.mixers.ops.kernel_threads import slice_bounds

    bounds = slice_bounds(rows, parts)
    assert [b for _, b in bounds[:-1]] == [a for a, _ in bounds[1:]]  # contiguous
    assert (bounds[0][0], bounds[-1][1]) == (0, rows) if rows else bounds == []
    assert len(bounds) == min(parts, rows) and all(b > a for a, b in bounds)
    sizes = [b - a for a, b in bounds]
    assert not sizes or max(sizes) - min(sizes) <= 1  # as even as possible


def test_the_kernel_gives_the_same_bits_on_one_thread_and_on_several():
    x = torch.randn(300, 1000, generator=torch.Generator().manual_seed(4), requires_grad=True)  # above MIN_ELEMENTS
    cotangent = torch.randn(300, 1000, generator=torch.Generator().manual_seed(5))
    results = []
    threads = torch.get_num_threads()
    try:
        for count in (1, 3):
            torch.set_num_threads(count)
            out = NumbaGELUTanh.apply(x)
            (grad,) = torch.autograd.grad(out, x, cotangent)
            results.append((out, grad))
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(results[0][0], results[1][0]) and torch.equal(results[0][1], results[1][1])
