"""The blocked ((q kᵀ) ⊙ M) v of H3's short form (`ops/gated_toeplitz.py`) ≡ the plain expression: values and the
gradients of q, k, v and M, over shapes and block sizes, in float64 and float32; the functorch fallback; and H3's
direct form ≡ its FFT form through it."""

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_icl.mixers.ops.gated_toeplitz import GatedToeplitz, block_rows, gated_toeplitz_mix


def plain(q, k, v, maps):
    return ((q @ k.transpose(-1, -2)) * maps) @ v


def value_and_grads(form, tensors, upstream):
    leaves = [t.detach().clone().requires_grad_() for t in tensors]
    out = form(*leaves)
    return (out, *torch.autograd.grad((out * upstream).sum(), leaves))


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    batch=st.integers(1, 7),
    heads=st.integers(1, 3),
    length=st.integers(1, 12),
    head_dim=st.integers(1, 5),
    rows=st.integers(1, 8),
    dtype=st.sampled_from([torch.float64, torch.float32]),
)
def test_blocked_form_equals_the_plain_expression(seed, batch, heads, length, head_dim, rows, dtype):
    generator = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(batch, heads, length, head_dim, generator=generator, dtype=dtype) for _ in range(3))
    maps = torch.randn(heads, length, length, generator=generator, dtype=dtype).tril()
    upstream = torch.randn(batch, heads, length, head_dim, generator=generator, dtype=dtype)
    blocked = value_and_grads(lambda *t: GatedToeplitz.apply(*t, rows), (q, k, v, maps), upstream)
    reference = value_and_grads(plain, (q, k, v, maps), upstream)
    tolerance = 1e-12 if dtype == torch.float64 else 1e-5
    for ours, oracle in zip(blocked, reference):
        assert ours.dtype == dtype and ours.shape == oracle.shape
        torch.testing.assert_close(ours, oracle, atol=tolerance, rtol=tolerance)


def test_dispatch_blocks_on_the_cpu_and_falls_back_under_functorch():
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(5, 2, 6, 3, generator=generator, dtype=torch.float64) for _ in range(3))
    maps = torch.randn(2, 6, 6, generator=generator, dtype=torch.float64).tril()
    out = gated_toeplitz_mix(q.requires_grad_(), k, v, maps)
    assert out.grad_fn is not None and "GatedToeplitz" in type(out.grad_fn).__name__
    torch.testing.assert_close(out, plain(q, k, v, maps))
    # torch.func's transforms see the plain expression (the blocked backward is first-order only)
    grad = torch.func.grad(lambda q: gated_toeplitz_mix(q, k, v, maps).sum())(q.detach())
    torch.testing.assert_close(grad, torch.func.grad(lambda q: plain(q, k, v, maps).sum())(q.detach()))


def test_block_rows_fill_the_cache_budget():
    assert block_rows(heads=8, length=82) == 4  # 4 · 8 · 82² ≈ 215k elements ≤ 2^18
    assert block_rows(heads=8, length=256) == 1  # never fewer than one row
    assert block_rows(heads=1, length=1) == 2**18


def test_h3_direct_form_equals_its_fft_form():
    import hf_icl
    from hf_icl.mixers.h3 import H3Mixer

    config = hf_icl.config_for("h3", "tiny")
    torch.manual_seed(0)
    mixer = H3Mixer(config, 0).double()
    x = torch.randn(6, 20, config.hidden_size, dtype=torch.float64, requires_grad=True)
    direct, fft = (mixer.mix(x, None, None, direct_max_length=limit)[-1] for limit in (20, 0))
    torch.testing.assert_close(direct, fft, atol=1e-10, rtol=1e-10)
    leaves = [x, *mixer.parameters()]
    (direct_grads, fft_grads) = (torch.autograd.grad(z.pow(2).sum(), leaves, allow_unused=True) for z in (direct, fft))
    for ours, oracle in zip(direct_grads, fft_grads):
        if oracle is None:  # W_o is applied after mix
            assert ours is None
            continue
        torch.testing.assert_close(ours, oracle, atol=1e-9, rtol=1e-9)
