"""The compiled (numba) RoPE ≡ `transformers`' `apply_rotary_pos_emb`, bit for bit, values and gradients of queries
and keys, over random shapes, strides and offsets; a hand case; the dispatch (`mixers.positions.rope_rotate`); and
whole RoPE models under both backends."""

import math

import pytest

pytest.importorskip("numba")

import torch  # noqa: E402
from backend_oracle import assert_model_agrees_under_both_backends, spy_on_kernel  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb  # noqa: E402

from hf_icl.mixers import positions  # noqa: E402
from hf_icl.mixers.ops.cpu_paths import SCAN_BACKEND_ENV  # noqa: E402
from hf_icl.mixers.ops.rope_numba import NumbaRoPE  # noqa: E402


def angles_of(length: int, head_dim: int, offset: int, base: float = 10000.0) -> torch.Tensor:
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    return torch.outer(torch.arange(offset, offset + length, dtype=torch.float32), inv_freq)  # (T, D/2)


def rotated_with_grads(fn, query, key, cotangents):
    q, k = query.detach().clone().requires_grad_(), key.detach().clone().requires_grad_()
    out_q, out_k = fn(q, k)
    grad_q, grad_k = torch.autograd.grad((out_q, out_k), (q, k), cotangents)
    return out_q.detach(), out_k.detach(), grad_q, grad_k


def reference(angles, dtype=torch.float32):
    emb = torch.cat([angles, angles], dim=-1)[None]  # (1, T, D)
    return lambda q, k: apply_rotary_pos_emb(q, k, emb.cos().to(dtype), emb.sin().to(dtype))


def compiled(angles):
    return lambda q, k: NumbaRoPE.apply(q, k, angles.cos(), angles.sin())


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    batch=st.integers(1, 5),
    heads=st.integers(1, 4),
    length=st.integers(1, 40),
    half=st.integers(1, 20),
    offset=st.integers(0, 500),
    fused_layout=st.booleans(),
)
def test_compiled_rope_equals_apply_rotary_pos_emb_bit_for_bit(seed, batch, heads, length, half, offset, fused_layout):
    gen = torch.Generator().manual_seed(seed)
    head_dim = 2 * half
    if fused_layout:  # the views attention takes of its fused projection (B, T, 3, H, D)
        qkv = torch.randn(batch, length, 3, heads, head_dim, generator=gen) * 3
        query, key, _ = (part.transpose(1, 2) for part in qkv.unbind(2))
    else:
        query, key = (torch.randn(batch, heads, length, head_dim, generator=gen) * 3 for _ in range(2))
    cotangents = tuple(torch.randn(batch, heads, length, head_dim, generator=gen) for _ in range(2))
    angles = angles_of(length, head_dim, offset)
    ours = rotated_with_grads(compiled(angles), query, key, cotangents)
    theirs = rotated_with_grads(reference(angles), query, key, cotangents)
    for mine, oracle in zip(ours, theirs):
        assert mine.shape == oracle.shape
        assert torch.equal(mine, oracle)


def test_hand_case_rotates_each_pair_by_its_angle():
    # D = 2: one pair (x₁, x₂) rotated by t·1 radians at position t.
    x = torch.tensor([1.0, 0.0]).expand(1, 1, 3, 2)  # (B, H, T, D), the same vector at positions 0, 1, 2
    angles = angles_of(3, 2, 0)  # θ_t = t
    out, _ = NumbaRoPE.apply(x, x, angles.cos(), angles.sin())
    expected = torch.tensor([[math.cos(t), math.sin(t)] for t in range(3)])
    torch.testing.assert_close(out[0, 0], expected)
    # The backward rotates back: the gradient of ⟨rope(x), g⟩ is rope⁻¹(g).
    leaf = x.clone().requires_grad_()
    rotated, _ = NumbaRoPE.apply(leaf, leaf.detach(), angles.cos(), angles.sin())
    (grad,) = torch.autograd.grad(rotated, leaf, expected[None, None])
    torch.testing.assert_close(grad[0, 0], torch.tensor([[1.0, 0.0]] * 3))


def test_dispatch_takes_the_kernel_only_where_it_applies(monkeypatch):
    calls = spy_on_kernel(monkeypatch, positions, "NumbaRoPE")
    query = torch.randn(2, 2, 5, 8)
    for backend, dtype, taken in (("auto", torch.float32, 1), ("torch", torch.float32, 0), ("auto", torch.float64, 0)):
        monkeypatch.setenv(SCAN_BACKEND_ENV, backend)
        calls.clear()
        q = query.to(dtype)
        out_q, out_k = positions.rope_rotate(q, q, 3, 10000.0)
        assert len(calls) == taken, (backend, dtype)
        expected = reference(angles_of(5, 8, 3), dtype)(q, q)
        assert torch.equal(out_q, expected[0]) and torch.equal(out_k, expected[1])


@pytest.mark.parametrize("architecture", ["transformer", "llama", "retnet"])
def test_rope_models_agree_under_both_backends(monkeypatch, architecture):
    assert_model_agrees_under_both_backends(monkeypatch, architecture, position_embedding="rope")
