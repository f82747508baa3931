"""The compiled causal Toeplitz-gated mix (H3's short form) ≡ the plain expression ((q kᵀ) ⊙ M) v with
M_tj = K[t − j] (j ≤ t), in values and in the gradients of q, k, v and the lags K; the same bits on one thread and on
several; a tiny H3 model trains the same under both backends."""

import pytest

pytest.importorskip("numba")

import torch  # noqa: E402
from backend_oracle import assert_model_agrees_under_both_backends  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from hf_icl.mixers.ops.gated_toeplitz import plain_gated_toeplitz_mix  # noqa: E402
from hf_icl.mixers.ops.toeplitz_numba import toeplitz_mix as tokens_first_mix  # noqa: E402


def toeplitz_mix(q, k, v, lags):
    """The compiled mix on (B, H, T, D) tensors, as the plain expression takes them (the kernel takes (B, T, H, D))."""
    z = tokens_first_mix(*(x.transpose(1, 2) for x in (q, k, v)), lags)
    return z.transpose(1, 2)


def toeplitz_maps(lags):
    """(H, T) lags → (H, T, T) causal maps M_tj = K[t − j], zero above the diagonal."""
    length = lags.shape[1]
    lag = torch.arange(length)[:, None] - torch.arange(length)[None]  # (T, T): t − j
    return lags[:, lag.clamp(min=0)] * (lag >= 0)


def mix_with_grads(function, inputs):
    leaves = [t.clone().requires_grad_() for t in inputs]
    z = function(*leaves)
    weights = torch.randn(z.shape, generator=torch.Generator().manual_seed(1), dtype=z.dtype)
    return (z, *torch.autograd.grad((z * weights).sum(), leaves))


def random_inputs(batch, heads, length, dim, seed, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(batch, heads, length, dim, generator=gen, dtype=dtype) for _ in range(3))
    return q, k, v, torch.randn(heads, length, generator=gen, dtype=dtype)


@settings(max_examples=30, deadline=None)
@given(batch=st.integers(1, 3), heads=st.integers(1, 4), length=st.integers(1, 30), dim=st.integers(1, 9),
       seed=st.integers(0, 2**16))  # fmt: skip
def test_compiled_mix_equals_the_plain_expression(batch, heads, length, dim, seed):
    inputs = random_inputs(batch, heads, length, dim, seed)
    ours = mix_with_grads(toeplitz_mix, inputs)
    oracle = mix_with_grads(lambda q, k, v, lags: plain_gated_toeplitz_mix(q, k, v, toeplitz_maps(lags)), inputs)
    for name, value, expected in zip(["z", "q", "k", "v", "lags"], ours, oracle):
        assert value.shape == expected.shape and value.dtype == expected.dtype, name
        torch.testing.assert_close(value, expected, atol=1e-10, rtol=1e-10, msg=name)


def test_several_threads_give_the_same_bits():
    inputs = random_inputs(5, 3, 90, 8, 0, dtype=torch.float32)  # above kernel_threads.MIN_ELEMENTS
    threads, results = torch.get_num_threads(), []
    try:
        for count in (1, 3):
            torch.set_num_threads(count)
            results.append(mix_with_grads(toeplitz_mix, inputs))
    finally:
        torch.set_num_threads(threads)
    for name, one, several in zip(["z", "q", "k", "v", "lags"], *results):
        if name == "lags":  # summed per slice in float64, then across slices
            torch.testing.assert_close(several, one, atol=1e-6, rtol=1e-6)
        else:
            assert torch.equal(one, several), name


def test_tiny_h3_trains_the_same_under_both_backends(monkeypatch):
    """A whole H3 model's loss and every parameter's gradient (the SSM's through ∂K and ∂D) agree between the
    compiled mix and the blocked matmul form, with left padding."""
    assert_model_agrees_under_both_backends(monkeypatch, "h3", length=50, left_padding=7)
