"""The compiled token-shift mixes ≡ their ATen expression and float64 (values; gradients of x, the carried last input
and the mixing vectors) over random shapes; a hand-computed case; the dispatch; a whole RWKV-7 under both backends."""

import pytest

pytest.importorskip("numba")

import torch  # noqa: E402
from backend_oracle import assert_model_agrees_under_both_backends, spy_on_kernel, values_and_grads  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from hf_icl.mixers.ops import token_shift as module  # noqa: E402
from hf_icl.mixers.ops.cpu_paths import SCAN_BACKEND_ENV  # noqa: E402
from hf_icl.mixers.ops.token_shift import token_shift_mixes  # noqa: E402
from hf_icl.mixers.ops.token_shift_numba import NumbaTokenShift  # noqa: E402


def aten(x, last, mix):
    previous = torch.cat([last[:, None], x[:, :-1]], dim=1)
    return x + (previous - x) * mix[:, None, None, :]  # (M, B, T, d)


def compiled(x, last, mix):
    return torch.stack(NumbaTokenShift.apply(x, last, mix))  # (M, B, T, d)


@settings(max_examples=40, deadline=None)
@given(batch=st.integers(1, 4), length=st.integers(1, 20), width=st.integers(1, 40), mixes=st.integers(1, 6),
       seed=st.integers(0, 10_000))  # fmt: skip
def test_compiled_token_shift_equals_aten_and_float64(batch, length, width, mixes, seed):
    gen = torch.Generator().manual_seed(seed)
    x, last = torch.randn(batch, length, width, generator=gen), torch.randn(batch, width, generator=gen)
    mix = torch.rand(mixes, width, generator=gen)
    cotangent = torch.randn(mixes, batch, length, width, generator=gen)
    ours = values_and_grads(compiled, (x, last, mix), cotangent)
    exact = values_and_grads(aten, (x.double(), last.double(), mix.double()), cotangent.double())
    for name, mine, truth in zip(["out", "x", "last", "mix"], ours, exact):
        # ∂μ sums B·T terms of size |G| · |x_{t−1} − x_t|: float32 rounding of that sum
        terms = batch * length if name == "mix" else 2 * mixes
        tolerance = 8 * terms * torch.finfo(torch.float32).eps * (truth.abs().max().item() + 1.0)
        assert mine.shape == truth.shape, name
        assert (mine.double() - truth).abs().max().item() <= tolerance, name


def test_hand_computed_case():
    x = torch.tensor([[[1.0], [3.0]]])  # B = 1, T = 2, d = 1
    last = torch.tensor([[5.0]])
    mix = torch.tensor([[0.25], [1.0]])
    out = compiled(x, last, mix)
    # m = 0: 1 + (5 − 1)/4 = 2, 3 + (1 − 3)/4 = 2.5; m = 1: the previous token itself, 5 and 1
    assert out[:, 0, :, 0].tolist() == [[2.0, 2.5], [5.0, 1.0]]


def test_dispatch_takes_the_kernel_only_where_it_applies(monkeypatch):
    calls = spy_on_kernel(monkeypatch, module, "NumbaTokenShift")
    x, last, mix = torch.randn(2, 3, 4), torch.zeros(2, 4), torch.rand(6, 4)
    token_shift_mixes(x, last, mix)
    assert calls == [torch.float32]
    token_shift_mixes(x.double(), last.double(), mix.double())  # float64: ATen
    monkeypatch.setenv(SCAN_BACKEND_ENV, "torch")
    torch.testing.assert_close(torch.stack(token_shift_mixes(x, last, mix)), aten(x, last, mix))
    assert calls == [torch.float32]


def test_rwkv7_trains_and_decodes_the_same_under_both_backends(monkeypatch):
    assert_model_agrees_under_both_backends(monkeypatch, "rwkv7", length=40, left_padding=5, generated=4)
