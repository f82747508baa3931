"""RWKV-4 WKV and LSTM mixers against plainly written recurrences (paper 1, Appendix A.7–A.8); the declared state
size of every recurrent mixer against the state its cached decoding keeps."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import AutoModelForCausalLM
from transformers.models.rwkv.modeling_rwkv import rwkv_linear_attention_cpu

import hf_icl
from hf_icl.mixers import MIXERS, list_mixers, mixer_spec
from hf_icl.mixers.lstm import LSTMMixer
from hf_icl.mixers.rwkv import RWKVTimeMix, balanced_chunk_size, wkv_chunked, wkv_step
from hf_icl.modeling.cache import ICLCache


def wkv_textbook(w, u, k, v):
    """Eqs. (63)–(65) exactly as written: raw exponentials, no max subtraction."""
    a = b = torch.zeros_like(k[:, 0])
    out = []
    for t in range(k.shape[1]):
        bonus = torch.exp(u + k[:, t])
        out.append((a + bonus * v[:, t]) / (b + bonus))
        a = torch.exp(-w) * a + torch.exp(k[:, t]) * v[:, t]
        b = torch.exp(-w) * b + torch.exp(k[:, t])
    return torch.stack(out, dim=1)


def wkv_naive(w, u, k, v, mask=None):
    """The official stable recurrence, one token at a time; tokens with mask 0 are skipped (state unchanged)."""
    a = b = torch.zeros_like(k[:, 0])
    p = torch.full_like(a, -1e38)
    out = []
    for t in range(k.shape[1]):
        top = torch.maximum(p, u + k[:, t])
        e1, e2 = torch.exp(p - top), torch.exp(u + k[:, t] - top)
        out.append((e1 * a + e2 * v[:, t]) / (e1 * b + e2))
        top2 = torch.maximum(p - w, k[:, t])
        e1, e2 = torch.exp(p - w - top2), torch.exp(k[:, t] - top2)
        step = (e1 * a + e2 * v[:, t], e1 * b + e2, top2)
        keep = torch.ones_like(a, dtype=torch.bool) if mask is None else mask[:, t, None]
        a, b, p = (torch.where(keep, new, old) for new, old in zip(step, (a, b, p)))
    return torch.stack(out, dim=1), (a, b, p)


def random_wkv(seed, batch, length, channels, scale=1.0, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    w = torch.exp(torch.randn(channels, generator=gen, dtype=dtype) * 2)  # decays from fast to very slow
    u = torch.randn(channels, generator=gen, dtype=dtype)
    k = torch.randn(batch, length, channels, generator=gen, dtype=dtype) * scale
    v = torch.randn(batch, length, channels, generator=gen, dtype=dtype)
    return w, u, k, v


shapes = dict(
    seed=st.integers(0, 10_000),
    batch=st.integers(1, 3),
    length=st.integers(1, 40),
    channels=st.integers(1, 5),
    chunk=st.integers(1, 20),
)


@settings(max_examples=30, deadline=None)
@given(**shapes)
def test_chunked_wkv_equals_stable_recurrence(seed, batch, length, channels, chunk):
    w, u, k, v = random_wkv(seed, batch, length, channels, scale=3.0)
    z, state = wkv_chunked(w, u, k, v, chunk_size=chunk)
    z_ref, state_ref = wkv_naive(w, u, k, v)
    torch.testing.assert_close(z, z_ref, atol=1e-10, rtol=1e-9)
    for got, ref in zip(state, state_ref):
        torch.testing.assert_close(got, ref, atol=1e-10, rtol=1e-9)


@settings(max_examples=30, deadline=None)
@given(**shapes, split=st.integers(0, 40))
def test_padding_is_skipped_and_state_continues(seed, batch, length, channels, chunk, split):
    w, u, k, v = random_wkv(seed, batch, length, channels, scale=3.0)
    mask = torch.rand(batch, length, generator=torch.Generator().manual_seed(seed)) < 0.7  # any pattern
    split = min(split, length)
    z1, state = wkv_chunked(w, u, k[:, :split], v[:, :split], mask=mask[:, :split], chunk_size=chunk)
    z2, state = wkv_chunked(w, u, k[:, split:], v[:, split:], state, mask[:, split:], chunk)
    z_ref, state_ref = wkv_naive(w, u, k, v, mask)
    torch.testing.assert_close(torch.cat([z1, z2], 1)[mask], z_ref[mask], atol=1e-10, rtol=1e-9)
    for got, ref in zip(state, state_ref):
        torch.testing.assert_close(got, ref, atol=1e-10, rtol=1e-9)


def test_chunked_wkv_equals_textbook_formula_and_transformers_rwkv():
    w, u, k, v = random_wkv(0, 2, 50, 6, scale=1.0)
    z, _ = wkv_chunked(w, u, k, v, chunk_size=8)
    torch.testing.assert_close(z, wkv_textbook(w, u, k, v), atol=1e-10, rtol=1e-9)
    official, _ = rwkv_linear_attention_cpu(torch.log(w), u, k, v)  # transformers' RWKV-4 CPU path (keys in fp32)
    torch.testing.assert_close(z, official, atol=1e-6, rtol=1e-5)


def test_large_keys_stay_finite_and_exact():
    w, u, k, v = random_wkv(1, 2, 64, 8, dtype=torch.float32)
    k = 50 + 50 * torch.rand(k.shape, generator=torch.Generator().manual_seed(2))  # e^k overflows fp32 above ~88
    assert not torch.isfinite(wkv_textbook(w, u, k, v)).all()  # the raw formula breaks down in fp32 ...
    z, state = wkv_chunked(w, u, k, v, chunk_size=16)
    assert all(torch.isfinite(t).all() for t in (z, *state))
    exact = wkv_textbook(*(t.double() for t in (w, u, k, v)))  # ... but not in fp64, which is the reference
    torch.testing.assert_close(z.double(), exact, atol=1e-4, rtol=1e-4)


def test_recurrent_step_equals_chunked():
    w, u, k, v = random_wkv(3, 2, 12, 4)
    mask = torch.tensor([[0, 0, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1], [1] * 12], dtype=torch.bool)
    z_full, state_full = wkv_chunked(w, u, k, v, mask=mask, chunk_size=5)
    state = (
        torch.zeros(2, 4, dtype=w.dtype),
        torch.zeros(2, 4, dtype=w.dtype),
        torch.full((2, 4), -1e38, dtype=w.dtype),
    )
    steps = []
    for t in range(12):
        z, state = wkv_step(w, u, k[:, t], v[:, t], state, mask[:, t])
        steps.append(z)
    torch.testing.assert_close(torch.stack(steps, 1)[mask], z_full[mask], atol=1e-12, rtol=1e-10)
    for got, ref in zip(state, state_full):
        torch.testing.assert_close(got, ref, atol=1e-12, rtol=1e-10)


def test_chunked_wkv_gradient_equals_recurrence_gradient():
    inputs = [t.requires_grad_() for t in random_wkv(4, 2, 23, 3, scale=3.0)]
    grads = [torch.autograd.grad(f(*inputs)[0].square().sum(), inputs) for f in (wkv_naive, wkv_chunked)]
    for got, ref in zip(grads[1], grads[0]):
        torch.testing.assert_close(got, ref, atol=1e-9, rtol=1e-8)


def test_balanced_chunk_size_minimises_the_chunked_work_and_respects_the_cap():
    for length in (1, 7, 82, 500, 2048, 10_000):
        work = {c: length * c + (length / c) ** 2 for c in range(1, 65)}  # in-chunk T·C + cross-chunk (T/C)²
        chosen = balanced_chunk_size(length, 64)
        assert work[chosen] <= 1.2 * min(work.values()), (length, chosen)
        assert balanced_chunk_size(length, 4) == min(4, chosen)
    assert (balanced_chunk_size(82, 16), balanced_chunk_size(2048, 16)) == (6, 16)


def test_rwkv_output_does_not_depend_on_scan_chunk_size():
    torch.manual_seed(0)
    mixer = RWKVTimeMix(hf_icl.config_for("rwkv", "tiny", scan_chunk_size=16), 0).double()
    x = torch.randn(2, 40, 64, dtype=torch.float64)
    reference = mixer(x)
    mixer.chunk_size = 2
    torch.testing.assert_close(mixer(x), reference, atol=1e-6, rtol=1e-5)  # WKV runs in float32


def test_rwkv_init_follows_rwkv4():
    config = hf_icl.config_for("rwkv", "tiny", hidden_size=4, num_attention_heads=1)
    mixer = RWKVTimeMix(config, layer_idx=0)
    mixer.reset_mixer_parameters()
    # layer 0 of 2: decay −5 + 8·(h/3)^0.7, u = log 0.3 + 0.5·((h+1) mod 3 − 1), μ_k = μ_v = h/4, μ_r = (h/4)^0.5
    expected = {
        "time_decay": [-5.0, -5 + 8 * (1 / 3) ** 0.7, -5 + 8 * (2 / 3) ** 0.7, 3.0],
        "time_first": [math.log(0.3), math.log(0.3) + 0.5, math.log(0.3) - 0.5, math.log(0.3)],
        "time_mix_k": [0.0, 0.25, 0.5, 0.75],
        "time_mix_v": [0.0, 0.25, 0.5, 0.75],
        "time_mix_r": [0.0, 0.5, 0.5**0.5, 0.75**0.5],
    }
    for name, values in expected.items():
        torch.testing.assert_close(getattr(mixer, name).detach(), torch.tensor(values), atol=1e-6, rtol=0)


@pytest.mark.parametrize("arch", ["rwkv", "lstm"])
def test_from_pretrained_keeps_trained_mixer_weights(arch, tmp_path):
    model = AutoModelForCausalLM.from_config(hf_icl.config_for(arch, "tiny", vocab_size=20))
    with torch.no_grad():
        for param in model.model.layers.parameters():
            param.add_(torch.randn_like(param))  # no longer the init values
    model.save_pretrained(tmp_path)
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path)
    for (name, param), other in zip(model.named_parameters(), loaded.parameters()):
        assert torch.equal(param, other), name


def lstm_mixer(seed=0, width=6):
    torch.manual_seed(seed)
    config = hf_icl.config_for("lstm", "tiny", hidden_size=width, num_attention_heads=1)
    mixer = LSTMMixer(config, layer_idx=0)
    mixer.reset_mixer_parameters()
    return mixer


def test_lstm_mixer_is_equations_56_to_61_with_forget_bias_one():
    mixer = lstm_mixer()
    x = torch.randn(2, 5, 6)
    w_i, w_f, w_c, w_o = mixer.weight_ih_l0.chunk(4)
    u_i, u_f, u_c, u_o = mixer.weight_hh_l0.chunk(4)
    bias = mixer.bias_ih_l0 + mixer.bias_hh_l0
    assert bias.tolist() == [0.0] * 6 + [1.0] * 6 + [0.0] * 12  # forget gate (second block) starts at 1
    b_i, b_f, b_c, b_o = bias.chunk(4)
    h = c = torch.zeros(2, 6)
    outputs = []
    for t in range(5):
        f = torch.sigmoid(x[:, t] @ w_f.T + h @ u_f.T + b_f)
        i = torch.sigmoid(x[:, t] @ w_i.T + h @ u_i.T + b_i)
        o = torch.sigmoid(x[:, t] @ w_o.T + h @ u_o.T + b_o)
        c = f * c + i * torch.tanh(x[:, t] @ w_c.T + h @ u_c.T + b_c)
        h = o * torch.tanh(c)
        outputs.append(h)
    with torch.no_grad():
        torch.testing.assert_close(mixer(x), torch.stack(outputs, 1), atol=1e-6, rtol=0)


def test_lstm_padded_rows_equal_their_real_tokens_alone():
    mixer = lstm_mixer(1)
    x = torch.randn(4, 7, 6)
    mask = torch.tensor([[0, 0, 0, 1, 1, 1, 1], [1] * 7, [0] * 7, [0, 1, 1, 0, 1, 0, 1]], dtype=torch.bool)
    cache = ICLCache(1)
    with torch.no_grad():
        out = mixer(x, attention_mask=mask.long(), cache=cache)
        for row in (0, 1, 3):
            alone_cache = ICLCache(1)
            alone = mixer(x[row : row + 1, mask[row]], cache=alone_cache)
            torch.testing.assert_close(out[row, mask[row]], alone[0], atol=1e-6, rtol=0)
            for name in ("h", "c"):
                expected = alone_cache.layer_state(0).get(name)[0]
                torch.testing.assert_close(cache.layer_state(0).get(name)[row], expected, atol=1e-6, rtol=0)
    for name in ("h", "c"):  # a row of padding only keeps the empty state
        assert (cache.layer_state(0).get(name)[2] == 0).all()
    assert (out[~mask] == 0).all()


def test_lstm_cached_steps_equal_full_forward():
    mixer = lstm_mixer(2)
    x = torch.randn(2, 9, 6)
    with torch.no_grad():
        full = mixer(x)
        cache = ICLCache(1)
        parts = [mixer(x[:, :3], cache=cache)] + [mixer(x[:, t : t + 1], cache=cache) for t in range(3, 9)]
    torch.testing.assert_close(torch.cat(parts, 1), full, atol=1e-6, rtol=0)
    assert mixer.state_size() == 2 * 6 * 4


def architecture_using(mixer: str) -> str:
    """A registered architecture whose default layers are all `mixer` (so the state has that architecture's shapes),
    else the Transformer with every layer set to `mixer` (per-layer mixers are configuration)."""
    for name in hf_icl.list_architectures():
        if set(hf_icl.ARCHITECTURES[name].config_class().mixer_types) == {mixer}:
            return name
    return "transformer"


RECURRENT_MIXERS = sorted(name for name in list_mixers() if mixer_spec(name).recurrent)


def recurrent_mixer_config(mixer: str):
    arch = architecture_using(mixer)
    return hf_icl.config_for(arch, "tiny", vocab_size=20, **({} if arch != "transformer" else {"mixer": mixer}))


@pytest.mark.parametrize("mixer", RECURRENT_MIXERS)
def test_state_size_is_the_state_decoding_keeps(mixer):
    """`state_size()` equals the bytes per sequence of the layer's cached state, after prefill and every step."""
    torch.manual_seed(0)
    config = recurrent_mixer_config(mixer)
    model = AutoModelForCausalLM.from_config(config).eval()  # float32, as `state_size()` counts
    layers = model.model.layers
    assert {type(layer.mixer) for layer in layers} == {MIXERS[mixer]}
    batch, input_ids = 3, torch.randint(1, 20, (3, 8), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        cache = model(input_ids[:, :5], use_cache=True).cache
        for t in range(5, 9):
            for i, layer in enumerate(layers):
                assert layer.mixer.state_size() == cache.layer_state(i).nbytes() // batch > 0, (t, i)
            assert cache.model_state.nbytes() == 0
            if t < 8:
                cache = model(input_ids[:, t : t + 1], cache=cache, use_cache=True).cache
