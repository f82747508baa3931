"""The 2024–2025 recurrent mixers against token-by-token recurrences written from their papers (values and
gradients): the delta rule, the gated delta rule, RWKV-7, Mamba-2's SSD, Based's Taylor linear attention, and
sliding-window attention against a dense masked softmax."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import hf_icl
from hf_icl.mixers import MIXERS
from hf_icl.mixers import rwkv7 as rwkv7_module
from hf_icl.mixers.based import taylor_features
from hf_icl.mixers.ops import delta_rule
from hf_icl.mixers.ops.delta_rule import dplr_chunked
from hf_icl.modeling.cache import ICLCache


def delta_rule_naive(q, k, v, beta, alpha=None):
    """Yang et al. 2024 eq. 1 (gated: Yang, Kautz & Hatamizadeh 2025 eq. 10), S (Dk, Dv), float64:
    S_t = α_t S_{t−1} + β_t k_t (v_t − α_t S_{t−1}ᵀ k_t)ᵀ,  o_t = S_tᵀ q_t."""
    batch, heads, length, dk = q.shape
    s = torch.zeros(batch, heads, dk, v.shape[-1], dtype=torch.float64)
    outs = []
    for t in range(length):
        decayed = s if alpha is None else alpha[:, :, t, :, None] * s
        error = v[:, :, t] - torch.einsum("bhkv,bhk->bhv", decayed, k[:, :, t])  # v_t − (α S)ᵀ k_t
        s = decayed + beta[:, :, t, :, None] * k[:, :, t, :, None] * error[:, :, None, :]
        outs.append(torch.einsum("bhkv,bhk->bhv", s, q[:, :, t]))
    return torch.stack(outs, 2), s


def rwkv7_naive(r, w, k, v, kk, a):
    """Peng et al. 2025 eq. 16, transposed to S (Dk, Dv): S_t = diag(w_t) S_{t−1} − (κ̂ ⊙ a)(κ̂ᵀ S_{t−1}) + k vᵀ."""
    batch, heads, length, dk = r.shape
    s = torch.zeros(batch, heads, dk, v.shape[-1], dtype=torch.float64)
    outs = []
    for t in range(length):
        removed = torch.einsum("bhk,bhkv->bhv", kk[:, :, t], s)  # κ̂ᵀ S
        s = w[:, :, t, :, None] * s - (kk[:, :, t] * a[:, :, t])[..., None] * removed[:, :, None]
        s = s + k[:, :, t, :, None] * v[:, :, t, None, :]
        outs.append(torch.einsum("bhkv,bhk->bhv", s, r[:, :, t]))
    return torch.stack(outs, 2), s


def random_inputs(seed, batch, heads, length, dk, dv):
    gen = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(batch, heads, length, dk, generator=gen, dtype=torch.float64) for _ in range(2))
    v = torch.randn(batch, heads, length, dv, generator=gen, dtype=torch.float64)
    k = F.normalize(k, dim=-1)
    beta = torch.rand(batch, heads, length, 1, generator=gen, dtype=torch.float64)
    return gen, q, k, v, beta


shapes = dict(
    seed=st.integers(0, 10_000),
    length=st.integers(1, 50),
    chunk=st.sampled_from([1, 4, 16, 64]),
    dk=st.integers(1, 6),
    dv=st.integers(1, 5),
)


@settings(max_examples=25, deadline=None)
@given(**shapes, gated=st.booleans(), strength=st.sampled_from([0.01, 1.0, 30.0]))
def test_the_delta_rules_shared_products_equal_the_general_form(seed, length, chunk, dk, dv, gated, strength):
    """`b_scale` (b = s ⊙ k: k's (C, C) products serve b, one product for the transition and the update) is the
    general chunked form, forward and gradients, with and without the gate and with an initial state."""
    gen, q, k, v, beta = random_inputs(seed, 2, 2, length, dk, dv)
    log_alpha = -strength * torch.rand(2, 2, length, 1, generator=gen, dtype=torch.float64) if gated else None
    scale = -1.0 if log_alpha is None else -log_alpha.exp()
    start = torch.randn(2, 2, dk, dv, generator=gen, dtype=torch.float64)
    leaves = [x.clone().requires_grad_() for x in (q, k, v, beta)]

    def run(shared):
        q_, k_, v_, beta_ = (x.float() for x in leaves)
        key = beta_ * k_
        out, state = dplr_chunked(q_, key, v_, k_, scale * key, log_alpha, chunk, start.float(),
                                  b_scale=scale if shared else None)  # fmt: skip
        grads = torch.autograd.grad((out.sum() + state.square().sum()), leaves)
        return out, state, grads

    (out, state, grads), (ref, ref_state, ref_grads) = run(True), run(False)
    torch.testing.assert_close(out, ref, atol=2e-5, rtol=1e-5)
    torch.testing.assert_close(state, ref_state, atol=2e-5, rtol=1e-5)
    for grad, ref_grad in zip(grads, ref_grads):
        torch.testing.assert_close(grad, ref_grad, atol=1e-4, rtol=1e-4)


@settings(max_examples=25, deadline=None)
@given(**shapes, gated=st.booleans(), strength=st.sampled_from([0.01, 1.0, 30.0]))
def test_chunked_delta_rule_equals_the_papers_recurrence(seed, length, chunk, dk, dv, gated, strength):
    gen, q, k, v, beta = random_inputs(seed, 2, 2, length, dk, dv)
    log_alpha = -strength * torch.rand(2, 2, length, 1, generator=gen, dtype=torch.float64) if gated else None
    alpha = None if log_alpha is None else log_alpha.exp()
    remove = -beta * k if alpha is None else -alpha * beta * k
    out, state = dplr_chunked(q, beta * k, v, k, remove, log_alpha, chunk)
    ref, ref_state = delta_rule_naive(q, k, v, beta, alpha)
    torch.testing.assert_close(out.double(), ref, atol=2e-5, rtol=1e-5)
    torch.testing.assert_close(state.double(), ref_state, atol=2e-5, rtol=1e-5)


@settings(max_examples=25, deadline=None)
@given(**shapes)
def test_chunked_rwkv7_equals_the_papers_recurrence(seed, length, chunk, dk, dv):
    gen, r, k, v, _ = random_inputs(seed, 2, 2, length, dk, dv)
    kk = F.normalize(torch.randn(2, 2, length, dk, generator=gen, dtype=torch.float64), dim=-1)
    a = torch.rand(2, 2, length, dk, generator=gen, dtype=torch.float64)
    log_w = -math.exp(-0.5) * torch.rand(2, 2, length, dk, generator=gen, dtype=torch.float64)
    out, state = dplr_chunked(r, k, v, -kk, kk * a, log_w, min(chunk, 32))
    ref, ref_state = rwkv7_naive(r, log_w.exp(), k, v, kk, a)
    torch.testing.assert_close(out.double(), ref, atol=2e-5, rtol=1e-5)
    torch.testing.assert_close(state.double(), ref_state, atol=2e-5, rtol=1e-5)


def test_per_key_dim_decays_beyond_the_bound_are_refused():
    q = torch.randn(1, 1, 64, 4)
    with pytest.raises(ValueError, match="shorter chunk_size"):
        dplr_chunked(q, q, q, q, q, torch.full((1, 1, 64, 4), -1.0), chunk_size=64)


@pytest.mark.parametrize("kind", ["delta", "gated", "rwkv7"])
def test_chunked_gradients_equal_the_recurrence_gradients(kind):
    gen, q, k, v, beta = random_inputs(1, 2, 2, 45, 4, 3)
    g = -torch.rand(2, 2, 45, 1 if kind == "gated" else 4, generator=gen, dtype=torch.float64) * 0.6
    leaves = [t.clone().requires_grad_() for t in (q, k, v, beta, g)]

    def chunked(q, k, v, beta, g):
        if kind == "delta":
            return dplr_chunked(q, beta * k, v, k, -beta * k, None, 16)[0]
        if kind == "gated":
            return dplr_chunked(q, beta * k, v, k, -g.exp() * beta * k, g, 16)[0]
        return dplr_chunked(q, k, v, -F.normalize(k, dim=-1), F.normalize(k, dim=-1) * beta, g, 16)[0]

    def naive(q, k, v, beta, g):
        if kind == "delta":
            return delta_rule_naive(q, k, v, beta)[0]
        if kind == "gated":
            return delta_rule_naive(q, k, v, beta, g.exp())[0]
        kk = F.normalize(k, dim=-1)
        return rwkv7_naive(q, g.exp(), k, v, kk, beta.expand_as(kk))[0]

    weights = torch.randn(2, 2, 45, 3, generator=gen, dtype=torch.float64)
    grads = [
        torch.autograd.grad((f(*leaves).double() * weights).sum(), leaves, allow_unused=True, materialize_grads=True)
        for f in (naive, chunked)
    ]
    for got, ref in zip(grads[1], grads[0]):
        torch.testing.assert_close(got.double(), ref, atol=1e-4, rtol=1e-4)


def tiny_mixer(arch, **overrides):
    torch.manual_seed(0)
    config = hf_icl.config_for(arch, "tiny", vocab_size=20, **overrides)
    mixer = MIXERS[config.mixer_types[0]](config, layer_idx=0)
    for module in mixer.modules():
        if hasattr(module, "reset_mixer_parameters"):
            module.reset_mixer_parameters()
    return mixer.double()


def ssd_naive(x, delta, A, B, C, D):
    """Mamba-2 (Dao & Gu 2024, §3): h_t = exp(Δ_t A) h_{t−1} + Δ_t B_t x_tᵀ, y_t = C_tᵀ h_t + D x_t, per head."""
    batch, heads, length, p = x.shape
    h = torch.zeros(batch, heads, B.shape[-1], p, dtype=torch.float64)
    outs = []
    for t in range(length):
        h = torch.exp(delta[:, :, t] * A[:, None])[..., None] * h
        h = h + delta[:, :, t, :, None] * B[:, :, t, :, None] * x[:, :, t, None, :]
        outs.append(torch.einsum("bhn,bhnp->bhp", C[:, :, t].expand(-1, heads, -1), h) + D[:, None] * x[:, :, t])
    return torch.stack(outs, 2)


def test_mamba2_ssd_equals_the_papers_recurrence_in_values_and_gradients():
    mixer = tiny_mixer("mamba2")
    with torch.no_grad():
        mixer.dt_bias.add_(2.0)  # large steps: strong decays within a chunk
    hidden = torch.randn(2, 70, 64, dtype=torch.float64, requires_grad=True)
    x, B, C, delta, _ = mixer.coefficients(hidden, None, None)
    A = -mixer.A_log.exp()
    got, ref = mixer.ssd(x, B, C, delta, None, None), ssd_naive(x, delta, A, B, C, mixer.D)
    torch.testing.assert_close(got.double(), ref, atol=1e-6, rtol=1e-6)
    weights = torch.randn_like(ref)
    grads = [
        torch.autograd.grad((y.double() * weights).sum(), [hidden, mixer.A_log], retain_graph=True) for y in (got, ref)
    ]
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)


def test_taylor_features_give_the_second_order_taylor_kernel():
    x, y = torch.randn(5, 16, dtype=torch.float64), torch.randn(5, 16, dtype=torch.float64)
    s = (x * y).sum(-1) / 4.0  # q·k / √d_f
    torch.testing.assert_close((taylor_features(x) * taylor_features(y)).sum(-1), 1 + s + s**2 / 2)
    assert taylor_features(x).shape[-1] == 1 + 16 + 16 * 17 // 2


@settings(max_examples=20, deadline=None)
@given(rows=st.integers(1, 40), dim=st.integers(1, 20))
def test_compiled_taylor_features_equal_the_pytorch_form_and_float64(rows, dim):
    """φ(x) through the compiled kernel: the same bits as the PyTorch form forward, and its gradient within float32
    rounding of the PyTorch form's and of the float64 form's."""
    torch.manual_seed(rows * 31 + dim)
    x = torch.randn(rows, dim)
    weights = torch.randn(rows, 1 + dim + dim * (dim + 1) // 2, dtype=torch.float64)

    def run(backend, dtype):
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("HF_ICL_SCAN_BACKEND", backend)
            leaf = x.to(dtype).requires_grad_()
            features = taylor_features(leaf)
            (grad,) = torch.autograd.grad((features * weights.to(dtype)).sum(), leaf)
        return features, grad

    compiled, compiled_grad = run("numba", torch.float32)
    plain, plain_grad = run("torch", torch.float32)
    exact, exact_grad = run("torch", torch.float64)
    assert torch.equal(compiled, plain)
    torch.testing.assert_close(compiled.double(), exact, atol=1e-5, rtol=1e-5)
    scale = max(1.0, exact_grad.abs().max().item())
    torch.testing.assert_close(compiled_grad, plain_grad, atol=2e-5 * scale, rtol=1e-4)
    torch.testing.assert_close(compiled_grad.double(), exact_grad, atol=2e-5 * scale, rtol=1e-4)


def test_taylor_features_train_after_a_first_call_under_inference_mode():
    from hf_icl.mixers.based import _pair_selector

    _pair_selector.cache_clear()  # the cached selector is built by the first call, here under inference mode
    with torch.inference_mode():
        scored = taylor_features(torch.randn(3, 8))
    x = torch.randn(3, 8, dtype=torch.float32, requires_grad=True)
    taylor_features(x).sum().backward()  # would raise if the cached selector were an inference tensor
    assert x.grad is not None and scored.shape == (3, 1 + 8 + 8 * 9 // 2)


def test_based_equals_normalised_taylor_attention_in_values_and_gradients():
    mixer = tiny_mixer("based")
    hidden = torch.randn(2, 50, 64, dtype=torch.float64, requires_grad=True)
    phi_q, phi_k, v = mixer.coefficients(hidden)
    got = mixer.attend(phi_q, phi_k, v, None, None)
    num = torch.zeros_like(v[:, :, 0, :, None] * phi_k[:, :, 0, None, :]).transpose(-1, -2)
    den = torch.zeros_like(phi_k[:, :, 0])
    outs = []
    for t in range(50):  # y_t = φ(q_t)ᵀ Σ φ(k_j) v_jᵀ / φ(q_t)ᵀ Σ φ(k_j)
        num = num + phi_k[:, :, t, :, None] * v[:, :, t, None, :]
        den = den + phi_k[:, :, t]
        outs.append(torch.einsum("bhf,bhfv->bhv", phi_q[:, :, t], num) / (phi_q[:, :, t] * den).sum(-1, True))
    ref = torch.stack(outs, 2)
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=1e-4)  # the chunked form runs in float32
    weights = torch.randn_like(ref)
    grads = [torch.autograd.grad((y * weights).sum(), hidden, retain_graph=True)[0] for y in (got, ref)]
    torch.testing.assert_close(grads[0], grads[1], atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("window", [1, 3, 8, 40])
def test_sliding_window_attention_equals_dense_masked_softmax_and_its_cache(window):
    config = hf_icl.config_for("based", "tiny", vocab_size=20, attention_window=window)
    torch.manual_seed(0)
    mixer = MIXERS["sliding_window_attention"](config, layer_idx=1).eval()
    hidden = torch.randn(2, 12, 64)
    q, k, v = mixer.split_heads(hidden)
    from hf_icl.mixers.positions import rope_rotate

    q, k = rope_rotate(q, k, 0, config.rope_theta)
    distance = torch.arange(12)[:, None] - torch.arange(12)[None]
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(~((distance >= 0) & (distance < window)), float("-inf"))
    ref = mixer.merge_heads((scores.softmax(-1) @ v).transpose(1, 2))
    with torch.no_grad():
        torch.testing.assert_close(mixer(hidden), ref, atol=1e-5, rtol=1e-5)
        cache = ICLCache(2)
        parts = [mixer(hidden[:, :5], cache=cache)]
        cache.advance(5)
        for t in range(5, 12):
            parts.append(mixer(hidden[:, t : t + 1], cache=cache))
            cache.advance(1)
            assert cache.layer_state(1).get("key").shape[2] == window - 1  # a fixed-size state
    torch.testing.assert_close(torch.cat(parts, 1), ref, atol=1e-5, rtol=1e-5)


@settings(max_examples=20, deadline=None)
@given(rows=st.integers(1, 30), width=st.integers(1, 40), scale=st.floats(0.1, 2.0), tiny=st.booleans())
def test_l2_normalize_compiled_equals_its_formula_in_values_and_gradients(rows, width, scale, tiny):
    """The delta rule's q/k normalisation s · x / √(Σ x² + ε) (fla's l2norm): the compiled RMSNorm route ≡ the ATen
    formula ≡ the formula in float64, values and gradients, on a strided (split) view, and near-zero rows finite."""
    from hf_icl.mixers.ops import l2_norm

    torch.manual_seed(rows * 41 + width)
    base = torch.randn(rows, 3 * width, dtype=torch.float64) * (1e-4 if tiny else 1.0)
    weights = torch.randn(rows, width, dtype=torch.float64)

    def run(backend, dtype):
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("HF_ICL_SCAN_BACKEND", backend)
            x = base.to(dtype).requires_grad_()
            y = l2_norm.l2_normalize(x[:, width : 2 * width], scale)  # a strided view, as q/k split from qkv
            (grad,) = torch.autograd.grad((y * weights.to(dtype)).sum(), x)
        return y.double(), grad.double()

    middle = base[:, width : 2 * width]
    exact = middle * scale / (middle.square().sum(-1, keepdim=True) + 1e-6).sqrt()
    reference_grad = run("torch", torch.float64)[1]
    for backend in ("numba", "torch"):
        y, grad = run(backend, torch.float32)
        torch.testing.assert_close(y, exact, atol=1e-5, rtol=1e-4)
        atol = 1e-4 * max(1.0, reference_grad.abs().max().item())
        torch.testing.assert_close(grad, reference_grad, atol=atol, rtol=1e-3)
        assert torch.isfinite(grad).all()


@settings(max_examples=25, deadline=None)
@given(length=st.integers(1, 40), window=st.integers(1, 12), pads=st.lists(st.integers(0, 40), min_size=2, max_size=2))
def test_banded_attention_equals_the_banded_mask_in_values_and_gradients(length, window, pads):
    """Block-by-block sliding-window attention ≡ one SDPA call with the banded (T, T) mask, left padding included
    (a padding query sees itself only, as the mixer's mask), with values and gradients."""
    from hf_icl.mixers.sliding_window_attention import banded_attention

    torch.manual_seed(length * 100 + window)
    q, k, v = (torch.randn(2, 2, length, 4, dtype=torch.float64, requires_grad=True) for _ in range(3))
    real = torch.arange(length)[None] >= torch.tensor(pads)[:, None].clamp(max=length - 1)  # (B, T)
    distance = torch.arange(length)[:, None] - torch.arange(length)[None]
    allowed = ((distance >= 0) & (distance < window))[None, None] & real[:, None, None] | (distance == 0)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    got = banded_attention(q, k, v, window, real)
    torch.testing.assert_close(got, ref)
    weights = torch.randn_like(ref)
    grads = [torch.autograd.grad((y * weights).sum(), (q, k, v), retain_graph=True) for y in (got, ref)]
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b)


def test_sliding_window_training_form_equals_its_cache_with_left_padding():
    """The mixer's block-by-block training form (T > 2W) on a left-padded batch ≡ its cached prefill and decoding,
    at the real positions."""
    config = hf_icl.config_for("based", "tiny", vocab_size=20, attention_window=4)
    torch.manual_seed(0)
    mixer = MIXERS["sliding_window_attention"](config, layer_idx=1).eval()
    hidden = torch.randn(2, 15, 64)
    mask = (torch.arange(15)[None] >= torch.tensor([[0], [5]])).long()
    with torch.no_grad():
        whole = mixer(hidden, attention_mask=mask)
        cache = ICLCache(2)
        parts = [mixer(hidden[:, :3], attention_mask=mask[:, :3], cache=cache)]
        cache.advance(3)
        for t in range(3, 15):
            parts.append(mixer(hidden[:, t : t + 1], attention_mask=mask[:, : t + 1], cache=cache))
            cache.advance(1)
    real = mask.bool()
    torch.testing.assert_close(torch.cat(parts, 1)[real], whole[real], atol=1e-5, rtol=1e-5)


@pytest.mark.skipif(
    not torch.cuda.is_available() or (delta_rule._FLA_DELTA is None and rwkv7_module.chunk_rwkv7 is None),
    reason="flash-linear-attention's delta-rule and RWKV-7 kernels need CUDA and the `fla` package",
)
@pytest.mark.parametrize("arch", ["deltanet", "gated_deltanet", "rwkv7"])
def test_fla_kernels_match_the_pure_path(arch, monkeypatch):  # pragma: no cover - CUDA only
    """The guarded CUDA prefill (fla's chunk kernels) against the pure chunked form, which is its oracle."""
    torch.manual_seed(0)
    config = hf_icl.config_for(arch, "tiny", vocab_size=20)
    mixer = MIXERS[config.mixer_types[0]](config, layer_idx=0).cuda().bfloat16()  # fla: half precision only
    hidden = torch.randn(2, 100, 64, device="cuda", dtype=torch.bfloat16)
    mask = torch.arange(100, device="cuda")[None] >= torch.tensor([[7], [0]], device="cuda")
    with torch.no_grad():
        fast = mixer(hidden, attention_mask=mask.long())
        monkeypatch.setattr(delta_rule, "_FLA_DELTA", None)
        monkeypatch.setattr(rwkv7_module, "chunk_rwkv7", None)
        pure = mixer(hidden, attention_mask=mask.long())
    torch.testing.assert_close(fast[mask].float(), pure[mask].float(), atol=3e-2, rtol=3e-2)


@settings(max_examples=10, deadline=None)
@given(heads=st.sampled_from([1, 2, 4]), seed=st.integers(0, 1000))
def test_rwkv7_output_norm_is_its_group_norm(heads, seed):
    """RWKV-7's finish normalises each head by LayerNorm plus the per-channel affine: the same as its nn.GroupNorm
    (one group per head) applied to the (B·T, d) rows, for random parameters."""
    mixer = tiny_mixer("rwkv7", num_attention_heads=heads)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        mixer.norm.weight.copy_(torch.randn(mixer.norm.weight.shape, generator=gen, dtype=torch.float64))
        mixer.norm.bias.copy_(torch.randn(mixer.norm.bias.shape, generator=gen, dtype=torch.float64))
    batch, length, width = 2, 5, mixer.k_k.numel()
    normal = dict(generator=gen, dtype=torch.float64)  # tiny_mixer is float64
    out, v = (torch.randn(batch, heads, length, width // heads, **normal) * 3 for _ in range(2))
    bonus, gate = torch.randn(batch, heads, length, 1, **normal), torch.randn(batch, length, width, **normal)
    expected = mixer.norm(out.transpose(1, 2).reshape(batch * length, width)).view(batch, length, heads, -1)
    expected = mixer.out_proj((expected + (bonus * v).transpose(1, 2)).reshape(batch, length, width) * gate)
    torch.testing.assert_close(mixer.finish(out, v, bonus, gate), expected, atol=1e-10, rtol=1e-10)
