"""The compiled (numba) RMSNorm ≡ `torch.nn.functional.rms_norm` and the float64 formula, values and gradients of the
input and the weight, over random shapes and scales; the dispatch (`modeling.rms_norm.RMSNorm`), checkpoints that
load into `nn.RMSNorm` unchanged, and whole Llama-style models under both backends."""

import pytest

pytest.importorskip("numba")

import torch  # noqa: E402
from backend_oracle import assert_model_agrees_under_both_backends, spy_on_kernel  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from hf_icl.mixers.ops.cpu_paths import SCAN_BACKEND_ENV  # noqa: E402
from hf_icl.mixers.ops.rms_norm_numba import NumbaRMSNorm  # noqa: E402
from hf_icl.modeling import rms_norm  # noqa: E402
from hf_icl.modeling.rms_norm import RMSNorm  # noqa: E402


def values_and_grads(fn, x, weight, cotangent):
    leaf, w = x.detach().clone().requires_grad_(), weight.detach().clone().requires_grad_()
    out = fn(leaf, w)
    grad_x, grad_w = torch.autograd.grad(out, (leaf, w), cotangent)
    return out.detach(), grad_x, grad_w


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    rows=st.lists(st.integers(1, 30), min_size=1, max_size=2),
    width=st.integers(1, 70),
    scale=st.sampled_from([1e-3, 1.0, 50.0]),
    eps=st.sampled_from([1e-6, 1e-5]),
)
def test_compiled_rms_norm_equals_aten_and_float64(seed, rows, width, scale, eps):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(*rows, width, generator=gen) * scale
    weight = torch.rand(width, generator=gen) + 0.5
    cotangent = torch.randn(*rows, width, generator=gen)
    ours = values_and_grads(lambda a, w: NumbaRMSNorm.apply(a, w, eps), x, weight, cotangent)
    aten = values_and_grads(lambda a, w: torch.nn.functional.rms_norm(a, (width,), w, eps), x, weight, cotangent)
    exact = values_and_grads(
        lambda a, w: torch.nn.functional.rms_norm(a, (width,), w, eps), x.double(), weight.double(), cotangent.double()
    )
    # Each result against the float64 truth, at float32 rounding of the size of its terms (sums may cancel).
    r = (x.double().pow(2).mean(-1, keepdim=True) + eps).rsqrt()
    term_sizes = (
        (x.double().abs() * r * weight.double()).max(),
        (cotangent.double().abs() * weight.double() * r).max() * 2,
        (cotangent.double().abs() * x.double().abs() * r).reshape(-1, width).sum(0).max(),
    )
    for mine, theirs, truth, size in zip(ours, aten, exact, term_sizes):
        tolerance = 64 * torch.finfo(torch.float32).eps * size.item() + 1e-30
        assert (mine.double() - truth).abs().max().item() <= tolerance
        assert (theirs.double() - truth).abs().max().item() <= tolerance  # the bound is one ATen meets too


def test_non_contiguous_input_and_a_hand_case():
    x = torch.tensor([[3.0, 4.0], [0.0, 0.0]])
    out = NumbaRMSNorm.apply(x, torch.tensor([1.0, 2.0]), 0.0 + 1e-12)
    # Row 1: mean square 12.5, so x / sqrt(12.5) = (0.8485, 1.1314) scaled by (1, 2); row 2 stays 0 (no NaN).
    torch.testing.assert_close(out[0], torch.tensor([3.0, 8.0]) / 12.5**0.5)
    assert out[1].tolist() == [0.0, 0.0]
    wide = torch.randn(6, 10, generator=torch.Generator().manual_seed(3))
    weight = torch.rand(6)
    torch.testing.assert_close(
        NumbaRMSNorm.apply(wide.t(), weight, 1e-5), torch.nn.functional.rms_norm(wide.t(), (6,), weight, 1e-5)
    )


def test_dispatch_takes_the_kernel_only_where_it_applies(monkeypatch):
    calls = spy_on_kernel(monkeypatch, rms_norm, "NumbaRMSNorm")
    norm = RMSNorm(8, eps=1e-5)
    x = torch.randn(3, 8)
    norm(x)
    assert calls == [torch.float32]
    norm.double()(x.double())  # float64: nn.RMSNorm's forward
    norm.bfloat16()(x.bfloat16())  # bf16: nn.RMSNorm's forward
    norm.float()
    monkeypatch.setenv(SCAN_BACKEND_ENV, "torch")
    torch.testing.assert_close(norm(x), torch.nn.functional.rms_norm(x, (8,), norm.weight, 1e-5))
    assert calls == [torch.float32]
    assert RMSNorm(8, eps=None)(x).shape == x.shape  # eps=None (finfo eps): nn.RMSNorm's forward
    assert calls == [torch.float32]


def test_state_dict_is_nn_rms_norms():
    ours, theirs = RMSNorm(5, eps=1e-6), torch.nn.RMSNorm(5, eps=1e-6)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["weight"]
    theirs.load_state_dict(ours.state_dict())


@pytest.mark.parametrize("architecture", ["llama", "gla"])
def test_rms_norm_models_train_the_same_under_both_backends(monkeypatch, architecture):
    model = assert_model_agrees_under_both_backends(monkeypatch, architecture)
    assert any(isinstance(module, RMSNorm) for module in model.modules())
