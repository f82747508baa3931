"""Oracles for the linear-attention family (linear attention, RetNet, GLA) and their shared chunked recurrence."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import hf_icl
from hf_icl.mixers.gla import GatedLinearAttention
from hf_icl.mixers.linear_attention import LinearAttention
from hf_icl.mixers.ops import chunk_decays
from hf_icl.mixers.ops import linear_recurrence as ops
from hf_icl.mixers.retnet import MultiScaleRetention, retention_log_decay
from hf_icl.modeling.cache import ICLCache

DECAYS = ("none", "head_fixed", "head_data", "key_dim")


def naive_recurrence(q, k, v, g=None, state=None):
    """S_t = diag(exp(g_t)) S_{t-1} + k_tᵀ v_t, o_t = q_t S_t, one time step at a time in float64."""
    batch, heads, length, dk = q.shape
    s = torch.zeros(batch, heads, dk, v.shape[-1], dtype=torch.float64) if state is None else state.double()
    outs = []
    for t in range(length):
        if g is not None:
            s = g[:, :, t].double().exp()[..., None] * s
        s = s + k[:, :, t, :, None].double() * v[:, :, t, None, :].double()
        outs.append(torch.einsum("bhk,bhkv->bhv", q[:, :, t].double(), s))
    return torch.stack(outs, dim=2), s


def make_inputs(kind, batch, heads, length, dk, dv, strength, seed=0):
    """Random q, k, v and a log decay of the given kind; `strength` scales the decay (per step, in nats)."""
    gen = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(batch, heads, length, dk, generator=gen) for _ in range(2))
    v = torch.randn(batch, heads, length, dv, generator=gen)
    shape = {"none": None, "head_fixed": (1, heads, 1, 1), "head_data": (batch, heads, length, 1)}
    shape["key_dim"] = (batch, heads, length, dk)
    g = None
    if shape[kind] is not None:
        g = F.logsigmoid(torch.randn(shape[kind], generator=gen) * 3) * strength
    return q, k, v, g


def expand(g, q):
    return None if g is None else g.expand(*q.shape[:3], -1)


@settings(max_examples=40, deadline=None)
@given(
    kind=st.sampled_from(DECAYS),
    length=st.integers(1, 70),
    chunk=st.sampled_from([1, 3, 8, 16, 64]),
    dk=st.integers(1, 6),
    dv=st.integers(1, 5),
    strength=st.sampled_from([0.01, 0.3, 3.0, 40.0]),
    with_state=st.booleans(),
)
def test_chunked_equals_naive_recurrence(kind, length, chunk, dk, dv, strength, with_state):
    q, k, v, g = make_inputs(kind, 2, 2, length, dk, dv, strength)
    state = torch.randn(2, 2, dk, dv) if with_state else None
    out, final = ops.chunked_linear_attention(q, k, v, g, chunk, state)
    ref_out, ref_final = naive_recurrence(q, k, v, expand(g, q), state)
    assert out.dtype == v.dtype and final.shape == (2, 2, dk, dv)
    scale = 1 + ref_out.abs().max().item()
    torch.testing.assert_close(out.double(), ref_out, atol=1e-5 * scale, rtol=0)
    torch.testing.assert_close(final.double(), ref_final, atol=1e-5 * (1 + ref_final.abs().max().item()), rtol=0)


@pytest.mark.parametrize("chunk", [8, 40, 64])  # one sub-chunk; a padded last sub-chunk; four whole sub-chunks
@pytest.mark.parametrize("strengths", [(0.02, 0.02), (0.02, 60.0), (60.0, 60.0), (0.02, 2.0, 60.0)])
def test_per_key_dim_paths_match_naive_in_values_and_gradients(chunk, strengths):
    # The per-key-dim path factors exp(b_i − b_j) into q and k on chunks that decay gently; chunks that decay
    # harder are tiled into sub-chunks (2 nats per step: the 64-step chunk is unsafe, its 16-step sub-chunks are
    # not; 60 nats: the sub-chunks are unsafe too and form explicit products). One call mixes these kinds.
    length = 48 * len(strengths)
    torch.manual_seed(0)  # inputs independent of which tests ran before in this worker
    q, k, v, g = make_inputs("key_dim", 2, 2, length, 4, 3, 1.0)
    g = -torch.rand_like(g) * torch.tensor(strengths).repeat_interleave(48)[None, None, :, None]
    total = {}
    for name, fn in (
        ("chunked", lambda *a: ops.chunked_linear_attention(*a, chunk_size=chunk)),
        ("naive", naive_recurrence),
    ):
        leaves = [x.clone().requires_grad_() for x in (q, k, v, g)]
        out, final = fn(*leaves)
        (out.double().sin().sum() + final.double().cos().sum()).backward()
        total[name] = [out.double(), *(x.grad.double() for x in leaves)]
    for ours, ref in zip(total["chunked"], total["naive"]):
        assert torch.isfinite(ours).all()
        torch.testing.assert_close(ours, ref, atol=1e-5 * (1 + ref.abs().max().item()), rtol=0)


@pytest.mark.parametrize("kind", DECAYS)
@pytest.mark.parametrize("length", [16, 29])  # whole chunks, and a padded last chunk
@pytest.mark.parametrize("decay_grad", [True, False])  # constant per-head decays take the in-function mask
def test_chunked_gradients_equal_naive_recurrence(kind, length, decay_grad):
    # The chunked form has a hand-written backward (ops.chunk_states): every input, the decay and the initial
    # state get the naive recurrence's gradients, from both the outputs and the final state.
    q, k, v, g = make_inputs(kind, 2, 2, length, 4, 3, 0.5)
    state = torch.randn(2, 2, 4, 3)
    grads = {}
    for name, fn in (
        ("chunked", lambda *a: ops.chunked_linear_attention(*a[:4], 8, a[4])),
        ("naive", lambda *a: naive_recurrence(*a[:3], expand(a[3], a[0]), a[4])),
    ):
        leaves = [None if x is None else x.clone().requires_grad_() for x in (q, k, v, g, state)]
        if leaves[3] is not None and not decay_grad:
            leaves[3] = g
        out, final = fn(*leaves)
        (out.double().sin().sum() + final.double().cos().sum()).backward()
        grads[name] = [x.grad.double() for x in leaves if x is not None and x.requires_grad]
    for ours, ref in zip(grads["chunked"], grads["naive"]):
        torch.testing.assert_close(ours, ref, atol=1e-5 * (1 + ref.abs().max().item()), rtol=0)


@pytest.mark.parametrize("kind", DECAYS)
def test_recurrent_step_chain_equals_chunked(kind):
    q, k, v, g = make_inputs(kind, 2, 3, 21, 5, 4, 0.5)
    full, full_state = ops.chunked_linear_attention(q, k, v, g, chunk_size=8)
    state, outs = None, []
    for t in range(q.shape[2]):
        step_g = None if g is None else expand(g, q)[:, :, t]
        out, state = ops.recurrent_step(q[:, :, t], k[:, :, t], v[:, :, t], step_g, state)
        outs.append(out)
    torch.testing.assert_close(torch.stack(outs, dim=2), full, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(state, full_state, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kind", DECAYS)
@pytest.mark.parametrize("cut", [1, 13, 16])
def test_initial_state_continues_a_sequence(kind, cut):
    q, k, v, g = make_inputs(kind, 2, 2, 30, 4, 3, 0.5)
    g = expand(g, q)
    full, full_state = ops.chunked_linear_attention(q, k, v, g, chunk_size=8)
    state, outs = None, []
    for part in (slice(0, cut), slice(cut, None)):
        out, state = ops.chunked_linear_attention(
            *(x[:, :, part] for x in (q, k, v)), None if g is None else g[:, :, part], 8, state
        )
        outs.append(out)
    torch.testing.assert_close(torch.cat(outs, dim=2), full, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(state, full_state, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kind", DECAYS)
def test_padded_positions_are_no_ops(kind):
    q, k, v, g = make_inputs(kind, 1, 2, 12, 4, 3, 2.0)
    mask = torch.ones(1, 12, dtype=torch.bool)
    mask[0, [0, 1, 5, 6, 11]] = False  # left padding, padding in the middle and a padded last step
    out = ops.linear_recurrence(q, k, v, expand(g, q), mask=mask, chunk_size=4)
    keep = mask[0]
    ref, _ = naive_recurrence(*(x[:, :, keep] for x in (q, k, v)), None if g is None else expand(g, q)[:, :, keep])
    torch.testing.assert_close(out[:, :, keep].double(), ref, atol=1e-5, rtol=1e-5)


@settings(max_examples=60, deadline=None)
@given(
    length=st.integers(1, 150),
    size=st.sampled_from([1, 4, 16, 64]),  # 64 and 16: unsafe sub-chunks are tiled again (64 → 16 → 4)
    dk=st.integers(1, 5),
    strength=st.sampled_from([0.1, 3.0, 8.0, 40.0, 1000.0]),  # 8: 16-step sub-chunks unsafe, 4-step ones safe
    seed=st.integers(0, 2**16),
)
def test_tiled_scores_equal_the_explicit_products(length, size, dk, strength, seed):
    # Brute force: A_ij = Σ_d q_id k_jd exp(b_id − b_jd) for j ≤ i, formed in float64.
    gen = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(3, length, dk, generator=gen) for _ in range(2))
    b = (-torch.rand(3, length, dk, generator=gen, dtype=torch.float64) * strength).cumsum(1)
    scores = chunk_decays.tiled_scores(q, k, b, size)
    exponent = (b[:, :, None] - b[:, None]).masked_fill(~torch.ones(length, length).tril().bool()[..., None], -math.inf)
    reference = (q.double()[:, :, None] * k.double()[:, None] * exponent.exp()).sum(-1)
    assert torch.isfinite(scores).all()
    torch.testing.assert_close(scores.double(), reference, atol=1e-5 * (1 + reference.abs().max().item()), rtol=0)


def test_strong_decays_stay_finite():
    q, k, v, _ = make_inputs("key_dim", 1, 1, 64, 4, 3, 1.0)
    g = torch.full((1, 1, 64, 4), -1000.0)  # exp(cumsum) would be exp(±64000)
    out, final = ops.chunked_linear_attention(q, k, v, g, chunk_size=64)
    # Every state is forgotten at once: o_t = q_t·k_t v_t.
    torch.testing.assert_close(out, (q * k).sum(-1, keepdim=True) * v, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(final, k[:, :, -1, :, None] * v[:, :, -1, None, :], atol=1e-6, rtol=0)


def test_retention_decays_follow_the_retnet_paper():
    lam = retention_log_decay(4).exp().flatten()
    torch.testing.assert_close(lam, torch.tensor([1 - 1 / 32, 1 - 1 / 64, 1 - 1 / 128, 1 - 1 / 256]))


MIXERS = {"linear_transformer": LinearAttention, "retnet": MultiScaleRetention, "gla": GatedLinearAttention}


def tiny_mixer(arch, **overrides):
    torch.manual_seed(0)
    config = hf_icl.config_for(arch, "tiny", **overrides)
    return MIXERS[arch](config, layer_idx=0).eval()


@pytest.mark.parametrize("arch", sorted(MIXERS))
def test_mixer_output_does_not_depend_on_chunk_size(arch):
    x = torch.randn(2, 23, 64)
    with torch.no_grad():
        outs = [tiny_mixer(arch, scan_chunk_size=c)(x) for c in (1, 5, 64)]
    for out in outs[1:]:
        torch.testing.assert_close(out, outs[0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("arch", sorted(MIXERS))
def test_mixer_trains_under_bf16_autocast(arch):
    # bf16 autocast for the projections; the chunked recurrence runs in float32 inside (its custom backward too)
    mixer, x = tiny_mixer(arch).train(), torch.randn(2, 23, 64, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = mixer(x)
    out.float().square().mean().backward()
    assert torch.isfinite(x.grad).all() and all(torch.isfinite(p.grad).all() for p in mixer.parameters())
    torch.testing.assert_close(out.float(), mixer(x).detach(), atol=0.1, rtol=0.1)


@pytest.mark.parametrize("arch", sorted(MIXERS))
def test_mixer_continues_from_its_state_in_blocks(arch):
    mixer, x = tiny_mixer(arch, scan_chunk_size=4), torch.randn(2, 17, 64)
    cache = ICLCache(1)
    with torch.no_grad():
        full = mixer(x)
        pieces = []
        for block in (slice(0, 6), slice(6, 7), slice(7, 17)):  # prefill, one step, then a block with a state
            pieces.append(mixer(x[:, block], cache=cache))
            cache.advance(block.stop - block.start)
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, atol=1e-5, rtol=1e-5)
    assert mixer.state_size() == cache.layer_state(0).nbytes() // 2


@pytest.mark.skipif(
    not torch.cuda.is_available() or ops.chunk_simple_gla is None,
    reason="flash-linear-attention chunk kernels need CUDA and the `fla` package (pip install hf-icl[cuda])",
)
@pytest.mark.parametrize("kind", DECAYS)
def test_fla_kernels_match_pure_path(kind, monkeypatch):  # pragma: no cover - CUDA only
    q, k, v, g = make_inputs(kind, 2, 2, 100, 32, 64, 0.3)
    state = torch.randn(2, 2, 32, 64)
    cuda = [None if x is None else x.cuda() for x in (q * 32**-0.5, k, v, g, state)]
    fast, fast_state = ops.chunked_linear_attention(*cuda[:4], 64, cuda[4])
    monkeypatch.setattr(ops, "chunk_simple_gla", None)
    pure, pure_state = ops.chunked_linear_attention(*cuda[:4], 64, cuda[4])
    torch.testing.assert_close(fast, pure, atol=2e-3, rtol=2e-3)
    torch.testing.assert_close(fast_state, pure_state, atol=2e-3, rtol=2e-3)
    assert math.isfinite(fast.abs().max().item())
