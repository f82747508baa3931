"""The compiled (numba) selective scan ≡ the chunked torch scan: values, final state and all gradients, in float32
and float64, with padded (Δ = 0) steps, initial states and odd lengths; backend selection; a tiny Mamba model's
loss and gradients under both backends."""

import pytest

pytest.importorskip("numba")

import torch  # noqa: E402
from backend_oracle import assert_model_agrees_under_both_backends  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from hf_icl.mixers.ops import selective_scan as scan_module  # noqa: E402
from hf_icl.mixers.ops.selective_scan import SCAN_BACKEND_ENV, scan_backend, selective_scan  # noqa: E402


def random_inputs(batch, length, channels, state_size, seed, dtype, padded_fraction=0.25):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, length, channels, generator=gen, dtype=dtype)
    delta = torch.rand(batch, length, channels, generator=gen, dtype=dtype) * 2
    delta = delta.masked_fill(torch.rand(batch, length, 1, generator=gen) < padded_fraction, 0.0)  # padded steps
    A = -torch.rand(channels, state_size, generator=gen, dtype=dtype) * 5
    B = torch.randn(batch, length, state_size, generator=gen, dtype=dtype)
    C = torch.randn(batch, length, state_size, generator=gen, dtype=dtype)
    h0 = torch.randn(batch, channels, state_size, generator=gen, dtype=dtype)
    return x, delta, A, B, C, h0


def scan_with_grads(backend, monkeypatch, inputs, with_state, chunk):
    """(y, state, ∂x, ∂Δ, ∂A, ∂B, ∂C[, ∂h0]) under `backend` for a fixed random linear loss."""
    monkeypatch.setenv(SCAN_BACKEND_ENV, backend)
    x, delta, A, B, C, h0 = (t.clone().requires_grad_() for t in inputs)
    leaves = [x, delta, A, B, C] + ([h0] if with_state else [])
    y, h = selective_scan(x, delta, A, B, C, initial_state=h0 if with_state else None, chunk_size=chunk)
    gen = torch.Generator().manual_seed(1)
    weights = [torch.randn(t.shape, generator=gen, dtype=t.dtype) for t in (y, h)]
    grads = torch.autograd.grad((y * weights[0]).sum() + (h * weights[1]).sum(), leaves)
    return (y, h, *grads)


def assert_backends_agree(monkeypatch, inputs, with_state, chunk, tolerance):
    names = ["y", "state", "x", "delta", "A", "B", "C", "h0"]
    ours = scan_with_grads("numba", monkeypatch, inputs, with_state, chunk)
    oracle = scan_with_grads("torch", monkeypatch, inputs, with_state, chunk)
    for name, value, expected in zip(names, ours, oracle):
        assert value.dtype == expected.dtype and value.shape == expected.shape, name
        scale = expected.abs().max().item() + 1.0
        torch.testing.assert_close(value, expected, atol=tolerance * scale, rtol=tolerance, msg=name)


@settings(max_examples=40, deadline=None)
@given(
    batch=st.integers(1, 3),
    length=st.integers(1, 70),
    channels=st.integers(1, 9),
    state_size=st.integers(1, 5),
    chunk=st.integers(1, 20),
    double=st.booleans(),
    with_state=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_numba_scan_equals_torch_scan(batch, length, channels, state_size, chunk, double, with_state, seed):
    with pytest.MonkeyPatch.context() as monkeypatch:
        dtype, tolerance = (torch.float64, 1e-10) if double else (torch.float32, 1e-5)
        inputs = random_inputs(batch, length, channels, state_size, seed, dtype)
        assert_backends_agree(monkeypatch, inputs, with_state, chunk, tolerance)


@pytest.mark.parametrize("length", [1, 63, 64, 65, 200])
def test_numba_scan_float32_at_model_width(monkeypatch, length):
    # D = 40 exercises the vector loops and their remainders; chunk 64 is capped by NUMBA_CHUNK_ELEMENTS as in a model
    inputs = random_inputs(2, length, 40, 16, seed=length, dtype=torch.float32)
    assert_backends_agree(monkeypatch, inputs, with_state=True, chunk=64, tolerance=1e-5)


def test_extreme_decays_stay_finite(monkeypatch):
    """Δ·A down to −10⁴ (decays underflow to 0) next to tiny steps, as the torch path's fp32 test."""
    x, delta, A, B, C, h0 = random_inputs(2, 50, 4, 3, seed=1, dtype=torch.float32)
    delta = torch.where(torch.rand_like(delta) < 0.3, torch.full_like(delta, 200.0), delta * 1e-4)
    assert_backends_agree(monkeypatch, (x, delta, A * 10, B, C, h0), with_state=True, chunk=8, tolerance=1e-5)


def test_backend_selection(monkeypatch):
    x = torch.zeros(1, 2, 3)
    monkeypatch.delenv(SCAN_BACKEND_ENV, raising=False)
    assert scan_backend(x, None) == "numba"
    monkeypatch.setenv(SCAN_BACKEND_ENV, "torch")
    assert scan_backend(x) == "torch"
    monkeypatch.setenv(SCAN_BACKEND_ENV, "cuda")
    with pytest.raises(ValueError, match="'auto', 'numba', 'torch'"):
        scan_backend(x)
    monkeypatch.setenv(SCAN_BACKEND_ENV, "numba")
    monkeypatch.setattr(scan_module, "NumbaSelectiveScan", None)  # as if numba were not installed
    with pytest.raises(ImportError, match="needs numba"):
        scan_backend(x)
    monkeypatch.setenv(SCAN_BACKEND_ENV, "auto")
    assert scan_backend(x) == "torch"
    inputs = random_inputs(1, 5, 3, 2, seed=0, dtype=torch.float32)
    y, h = selective_scan(*inputs[:5])  # the fallback runs
    assert y.shape == (1, 5, 3) and h.shape == (1, 3, 2)


def test_tiny_mamba_loss_and_gradients_agree_across_backends(monkeypatch):
    """Left padding: Δ = 0 at the padded steps."""
    assert_model_agrees_under_both_backends(monkeypatch, "mamba", length=37, left_padding=5)

def fused_scan_with_grads(backend, monkeypatch, inputs, skip, gate, chunk):
    """(y, state, ∂x, ∂raw Δ, ∂A, ∂B, ∂C, ∂h0, ∂D[, ∂z]) of the scan with Δ = softplus(raw), the skip D ⊙ x and,
    where `gate` is given, the output ⊙ SiLU(gate)."""
    monkeypatch.setenv(SCAN_BACKEND_ENV, backend)
    leaves = [t.clone().requires_grad_() for t in (*inputs, skip, *([] if gate is None else [gate]))]
    x, raw, A, B, C, h0, D, *z = leaves
    options = dict(initial_state=h0, chunk_size=chunk, D=D, delta_softplus=True, z=z[0] if z else None)
    y, h = selective_scan(x, raw, A, B, C, **options)
    gen = torch.Generator().manual_seed(1)
    weights = [torch.randn(t.shape, generator=gen, dtype=t.dtype) for t in (y, h)]
    grads = torch.autograd.grad((y * weights[0]).sum() + (h * weights[1]).sum(), leaves)
    return (y, h, *grads)


@settings(max_examples=25, deadline=None)
@given(
    batch=st.integers(1, 3),
    length=st.integers(1, 40),
    channels=st.integers(1, 9),
    state_size=st.integers(1, 4),
    chunk=st.integers(1, 12),
    double=st.booleans(),
    gated=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_fused_softplus_skip_and_gate_equal_the_torch_path_and_the_unfused_scan(
    batch, length, channels, state_size, chunk, double, gated, seed
):
    """The compiled scan's fused softplus, D skip and SiLU gate ≡ the torch path's softplus(raw), scan, + D ⊙ x,
    ⊙ SiLU(z), in values and in every gradient (∂raw Δ, ∂D, ∂z included); raw Δ holds −inf (padded steps: Δ = 0, no
    gradient) and values above softplus's threshold of 20 (passed through), and both ≡ the unfused scan by hand."""
    dtype, tolerance = (torch.float64, 1e-10) if double else (torch.float32, 1e-5)
    x, delta, A, B, C, h0 = random_inputs(batch, length, channels, state_size, seed, dtype, padded_fraction=0)
    gen = torch.Generator().manual_seed(seed + 1)
    raw = torch.randn(batch, length, channels, generator=gen, dtype=dtype) * 2
    raw = torch.where(torch.rand(raw.shape, generator=gen) < 0.1, torch.full_like(raw, 21.5), raw)  # above threshold
    raw = raw.masked_fill(torch.rand(batch, length, 1, generator=gen) < 0.2, float("-inf"))  # padded steps
    skip = torch.randn(channels, generator=gen, dtype=dtype)
    gate = torch.randn(batch, length, channels, generator=gen, dtype=dtype) * 3 if gated else None
    names = ["y", "state", "x", "raw delta", "A", "B", "C", "h0", "D", "z"]
    with pytest.MonkeyPatch.context() as monkeypatch:
        ours = fused_scan_with_grads("numba", monkeypatch, (x, raw, A, B, C, h0), skip, gate, chunk)
        oracle = fused_scan_with_grads("torch", monkeypatch, (x, raw, A, B, C, h0), skip, gate, chunk)
        monkeypatch.setenv(SCAN_BACKEND_ENV, "torch")
        y, h = selective_scan(x, torch.nn.functional.softplus(raw), A, B, C, initial_state=h0, chunk_size=chunk)
    assert len(ours) == len(oracle) == 9 + gated
    for name, value, expected in zip(names, ours, oracle):
        assert value.dtype == expected.dtype and value.shape == expected.shape, name
        assert torch.isfinite(value).all(), name
        scale = expected.abs().max().item() + 1.0
        torch.testing.assert_close(value, expected, atol=tolerance * scale, rtol=tolerance, msg=name)
    unfused = (y + x * skip) * (1 if gate is None else torch.nn.functional.silu(gate))
    torch.testing.assert_close(oracle[0], unfused, atol=tolerance, rtol=tolerance)
    torch.testing.assert_close(oracle[1], h, atol=tolerance, rtol=tolerance)
    padded = torch.isinf(raw)
    assert (ours[3][padded] == 0).all(), "a padded step (raw Δ = −inf) takes no gradient"


@pytest.mark.parametrize("gated", [False, True])
def test_several_threads_give_the_same_rows_and_the_same_sums(gated):
    """With several torch threads the batch is scanned in slices, one per thread: y, the state and every per-row
    gradient are the same bits as on one thread; ∂A and ∂D (summed per slice, then across slices) agree to float32
    rounding. The input is above `kernel_threads.MIN_ELEMENTS` (B·T·D·N), so the slices do run."""
    from hf_icl.mixers.ops.kernel_threads import MIN_ELEMENTS

    batch, length, channels, state_size = 5, 64, 32, 16
    assert batch * length * channels * state_size >= MIN_ELEMENTS
    x, delta, A, B, C, h0 = random_inputs(batch, length, channels, state_size, 3, torch.float32, padded_fraction=0)
    gen = torch.Generator().manual_seed(7)
    raw = torch.randn(batch, length, channels, generator=gen)
    skip = torch.randn(channels, generator=gen)
    gate = torch.randn(batch, length, channels, generator=gen) if gated else None
    from hf_icl.mixers.ops import selective_scan_numba as kernels

    threads, results, calls = torch.get_num_threads(), [], []
    try:
        for count in (1, 3):
            torch.set_num_threads(count)
            with pytest.MonkeyPatch.context() as monkeypatch:
                for name in ("scan_forward", "scan_backward"):
                    kernel = getattr(kernels, name)
                    monkeypatch.setattr(kernels, name, lambda *a, _k=kernel, _n=name: (calls.append(_n), _k(*a)))
                results.append(fused_scan_with_grads("numba", monkeypatch, (x, raw, A, B, C, h0), skip, gate, 9))
            calls.append(count)
    finally:
        torch.set_num_threads(threads)
    assert calls == ["scan_forward", "scan_backward", 1] + ["scan_forward"] * 3 + ["scan_backward"] * 3 + [3]
    names = ["y", "state", "x", "raw delta", "A", "B", "C", "h0", "D", "z"]
    for name, one, several in zip(names, *results):
        if name in ("A", "D"):
            torch.testing.assert_close(several, one, rtol=1e-6, atol=1e-6, msg=name)
        else:
            assert torch.equal(several, one), name
