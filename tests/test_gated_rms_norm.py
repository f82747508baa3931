"""The compiled gated RMSNorm ≡ its ATen expression and the float64 formula (values; gradients of x, the gate and
the weight), both orders, over random shapes and scales; a hand-computed row; and the dispatch."""

import pytest

pytest.importorskip("numba")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from backend_oracle import spy_on_kernel, values_and_grads  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from hf_icl.mixers.ops import gated_rms_norm as module  # noqa: E402
from hf_icl.mixers.ops.cpu_paths import SCAN_BACKEND_ENV  # noqa: E402
from hf_icl.mixers.ops.gated_rms_norm import gated_rms_norm  # noqa: E402
from hf_icl.mixers.ops.gated_rms_norm_numba import NumbaGatedRMSNorm  # noqa: E402


def aten(x, gate, weight, eps, gate_first):
    width = (x.shape[-1],)
    if gate_first:
        return F.rms_norm(x * F.silu(gate), width, weight, eps)
    return F.rms_norm(x, width, weight, eps) * F.silu(gate)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    rows=st.lists(st.integers(1, 20), min_size=1, max_size=2),
    width=st.integers(1, 70),
    scale=st.sampled_from([1e-2, 1.0, 20.0]),
    gate_first=st.booleans(),
)
def test_compiled_gated_rms_norm_equals_aten_and_float64(seed, rows, width, scale, gate_first):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(*rows, width, generator=gen) * scale
    gate = torch.randn(*rows, width, generator=gen) * 3
    weight = torch.rand(width, generator=gen) + 0.5
    cotangent = torch.randn(*rows, width, generator=gen)
    eps = 1e-5
    ours = values_and_grads(lambda a, z, w: NumbaGatedRMSNorm.apply(a, z, w, eps, gate_first), (x, gate, weight),
                            cotangent)  # fmt: skip
    exact = values_and_grads(lambda a, z, w: aten(a, z, w, eps, gate_first),
                             (x.double(), gate.double(), weight.double()), cotangent.double())  # fmt: skip
    theirs = values_and_grads(lambda a, z, w: aten(a, z, w, eps, gate_first), (x, gate, weight), cotangent)
    for mine, truth, reference in zip(ours, exact, theirs):
        # Against float64: 64 ulps of the largest term, or ATen's own float32 error where that is larger (sums of
        # many rows, e.g. ∂w, cancel).
        size = truth.abs().max().item() + cotangent.abs().max().item() * weight.max().item()
        aten_error = (reference.double() - truth).abs().max().item()
        tolerance = max(64 * torch.finfo(torch.float32).eps * size, 4 * aten_error) + 1e-30
        assert (mine.double() - truth).abs().max().item() <= tolerance


def test_hand_computed_row():
    # x = (3, 4), z large (SiLU(z) ≈ z): gate first, u = (3z, 4z), mean square 12.5 z², y = w ⊙ u / (√12.5 |z|).
    x, z, w = torch.tensor([[3.0, 4.0]]), torch.full((1, 2), 30.0), torch.tensor([1.0, 2.0])
    expected = torch.tensor([[3.0, 8.0]]) / 12.5**0.5
    torch.testing.assert_close(NumbaGatedRMSNorm.apply(x, z, w, 0.0, True), expected)
    # Norm first, z = 0: SiLU(0) = 0, so y = 0; z = 30: y = w ⊙ x / √12.5 · 30.
    assert NumbaGatedRMSNorm.apply(x, torch.zeros(1, 2), w, 0.0, False).abs().max().item() == 0.0
    torch.testing.assert_close(NumbaGatedRMSNorm.apply(x, z, w, 0.0, False), expected * 30.0)


def test_non_contiguous_inputs():
    gen = torch.Generator().manual_seed(1)
    x, gate = torch.randn(8, 5, generator=gen), torch.randn(8, 5, generator=gen)
    weight = torch.rand(8, generator=gen)
    for gate_first in (True, False):
        torch.testing.assert_close(NumbaGatedRMSNorm.apply(x.t(), gate.t(), weight, 1e-5, gate_first),
                                   aten(x.t(), gate.t(), weight, 1e-5, gate_first))  # fmt: skip


def test_dispatch_takes_the_kernel_only_where_it_applies(monkeypatch):
    calls = spy_on_kernel(monkeypatch, module, "NumbaGatedRMSNorm")
    x, gate, weight = torch.randn(3, 8), torch.randn(3, 8), torch.rand(8)
    gated_rms_norm(x, gate, weight, 1e-5, True)
    assert calls == [torch.float32]
    gated_rms_norm(x.double(), gate.double(), weight.double(), 1e-5, True)  # float64: ATen
    monkeypatch.setenv(SCAN_BACKEND_ENV, "torch")
    torch.testing.assert_close(gated_rms_norm(x, gate, weight, 1e-5, False), aten(x, gate, weight, 1e-5, False))
    assert calls == [torch.float32]
