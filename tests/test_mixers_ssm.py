"""Oracles for the convolutional / state-space mixers (S4D, H3, Hyena) and their ops (FFT conv, diagonal SSM).

Every fast form is compared with a plain loop over time written here, independently of the code under test.
"""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import hf_icl
from hf_icl.mixers.h3 import H3Mixer
from hf_icl.mixers.hyena import HyenaMixer
from hf_icl.mixers.ops.diagonal_ssm import DiagonalSSM
from hf_icl.mixers.ops.fft_conv import causal_fft_conv
from hf_icl.modeling.cache import ICLCache, MixerState

SETTINGS = settings(max_examples=15, deadline=None)


def direct_conv(u, kernel):
    """y_t = Σ_{j ≤ t} K_{t−j} u_j, looped."""
    out = torch.zeros_like(u)
    for t in range(u.shape[1]):
        for j in range(t + 1):
            if t - j < kernel.shape[0]:
                out[:, t] += kernel[t - j] * u[:, j]
    return out


@SETTINGS
@given(batch=st.integers(1, 3), length=st.integers(1, 24), channels=st.integers(1, 4), klen=st.integers(1, 30))
def test_fft_conv_equals_direct_conv(batch, length, channels, klen):
    gen = torch.Generator().manual_seed(length * 31 + klen)
    u = torch.randn(batch, length, channels, generator=gen, dtype=torch.float64)
    kernel = torch.randn(klen, channels, generator=gen, dtype=torch.float64)
    expected = direct_conv(u, kernel)
    torch.testing.assert_close(causal_fft_conv(u, kernel), expected)
    torch.testing.assert_close(causal_fft_conv(u, kernel.T, channels_first_kernel=True), expected)
    assert causal_fft_conv(u.float(), kernel.float()).dtype == torch.float32


def random_ssm(channels, state_size, seed, dtype=torch.float64):
    """A DiagonalSSM with strong and weak decays, fast and slow oscillations (not just the S4D-Lin init)."""
    torch.manual_seed(seed)
    ssm = DiagonalSSM(channels, state_size).to(dtype)
    with torch.no_grad():
        ssm.log_dt.uniform_(-6.0, 1.0)  # Δ up to e: |Ā| down to ~e^-20 with the real parts below
        ssm.log_A_real.uniform_(-3.0, 2.0)
        ssm.A_imag.uniform_(-20.0, 20.0)
        ssm.C.mul_(3.0)
    return ssm


def naive_ssm(ssm, u, h=None):
    """The S4D recurrence h_t = Ā h_{t−1} + B̄ u_t, y_t = 2 Re(C h_t) + D u_t, with ZOH written out here."""
    A = -torch.exp(ssm.log_A_real) + 1j * ssm.A_imag  # (C, P)
    A_bar = torch.exp(torch.exp(ssm.log_dt)[:, None] * A)
    B_bar = (A_bar - 1) / A
    C = ssm.C[..., 0] + 1j * ssm.C[..., 1]
    h = torch.zeros(u.shape[0], *A.shape, dtype=A.dtype) if h is None else h
    ys = []
    for t in range(u.shape[1]):
        h = A_bar * h + B_bar * u[:, t, :, None]
        ys.append(2 * (C * h).sum(-1).real + ssm.D * u[:, t])
    return torch.stack(ys, dim=1), h


@SETTINGS
@given(length=st.integers(1, 40), channels=st.integers(1, 5), state_size=st.sampled_from([2, 4, 6, 16]))
def test_diagonal_ssm_convolution_equals_recurrence(length, channels, state_size):
    ssm = random_ssm(channels, state_size, seed=length)
    u = 10 * torch.randn(2, length, channels, dtype=torch.float64)
    with torch.no_grad():
        expected, _ = naive_ssm(ssm, u)
        torch.testing.assert_close(ssm(u), expected, rtol=1e-9, atol=1e-8)
        torch.testing.assert_close(ssm.float()(u.float()), expected.float(), rtol=1e-4, atol=1e-3)


@SETTINGS
@given(
    cuts=st.lists(st.integers(1, 6), min_size=1, max_size=6),
    state_size=st.sampled_from([2, 8]),
    channels=st.integers(1, 3),
)
def test_diagonal_ssm_state_continuation(cuts, state_size, channels):
    """Prefill, then chunks of any length (T = 1 steps and T > 1 blocks) continue exactly; the state is h_T."""
    ssm = random_ssm(channels, state_size, seed=sum(cuts))
    length = sum(cuts) + 3
    u = torch.randn(2, length, channels, dtype=torch.float64)
    state, outputs, start = MixerState(), [], 0
    with torch.no_grad():
        for size in [3, *cuts]:
            outputs.append(ssm(u[:, start : start + size], state, prefix="s"))
            start += size
        expected, h = naive_ssm(ssm, u)
    torch.testing.assert_close(torch.cat(outputs, dim=1), expected, rtol=1e-9, atol=1e-8)
    stored = state.get("s")
    assert stored.shape == (2, channels, state_size // 2, 2)
    torch.testing.assert_close(torch.view_as_complex(stored.contiguous()), h, rtol=1e-9, atol=1e-9)
    assert ssm.state_bytes() == stored[0].numel() * 4  # fp32 bytes per sequence


def test_diagonal_ssm_shares_parameters_over_trailing_dims():
    ssm = random_ssm(3, 4, seed=0)
    u = torch.randn(2, 7, 3, 2, 5, dtype=torch.float64)
    with torch.no_grad():
        y = ssm(u)
        for i in range(2):
            for j in range(5):
                torch.testing.assert_close(y[..., i, j], naive_ssm(ssm, u[..., i, j])[0], rtol=1e-9, atol=1e-9)
        state = MixerState()
        stepped = torch.cat([ssm(u[:, :4], state), ssm(u[:, 4:5], state), ssm(u[:, 5:], state)], dim=1)
    torch.testing.assert_close(stepped, y, rtol=1e-9, atol=1e-9)
    assert state.get("ssm").shape == (2, 3, 2, 5, 2, 2)


def test_diagonal_ssm_gradients():
    ssm = random_ssm(2, 4, seed=1)
    u = torch.randn(1, 6, 2, dtype=torch.float64, requires_grad=True)
    params = [u, *ssm.parameters()]
    assert torch.autograd.gradcheck(lambda u, *p: ssm(u), params)


def test_s4d_lin_initialisation():
    ssm = DiagonalSSM(64, 8)
    torch.testing.assert_close(ssm.log_A_real.exp(), torch.full((64, 4), 0.5))
    torch.testing.assert_close(ssm.A_imag[0], math.pi * torch.arange(4.0))
    dt = ssm.log_dt.exp()
    assert dt.min() >= 1e-3 and dt.max() <= 1e-1


def mixer_config(arch, **overrides):
    return hf_icl.config_for(arch, "tiny", vocab_size=20, **overrides)


def stepwise(mixer, x, sizes):
    """Run a mixer through the cache in blocks of `sizes` tokens (a prefill, then T > 1 blocks or single steps)."""
    cache, outputs, start = ICLCache(1), [], 0
    for size in sizes:
        outputs.append(mixer(x[:, start : start + size], cache=cache))
        start += size
    assert start == x.shape[1]
    return torch.cat(outputs, dim=1), cache


def naive_h3(mixer, x):
    """H3 as a plain loop: shifted keys, per-head outer products kᵀv into S4D states, read out by q."""
    batch, length, width = x.shape
    heads, dh, ssm = mixer.num_heads, mixer.head_dim, mixer.ssm
    q, k, v = mixer.q_proj(x), mixer.k_proj(x), mixer.v_proj(x)
    taps = mixer.shift.conv.weight[:, 0]  # (d, K)
    window = taps.shape[1]
    k_pad = torch.cat([k.new_zeros(batch, window - 1, width), k], dim=1)
    A = -torch.exp(ssm.log_A_real) + 1j * ssm.A_imag  # (H, P)
    A_bar = torch.exp(torch.exp(ssm.log_dt)[:, None] * A)
    B_bar, C = (A_bar - 1) / A, ssm.C[..., 0] + 1j * ssm.C[..., 1]
    S = torch.zeros(batch, heads, dh, dh, A.shape[1], dtype=A.dtype)
    out = []
    for t in range(length):
        k_t = (taps * k_pad[:, t : t + window].transpose(1, 2)).sum(-1) + mixer.shift_skip * k[:, t]  # (B, d)
        kv = k_t.view(batch, heads, dh, 1) * v[:, t].view(batch, heads, 1, dh)  # (B, H, dh, dh)
        S = A_bar[:, None, None] * S + B_bar[:, None, None] * kv[..., None]
        z = 2 * (C[:, None, None] * S).sum(-1).real + ssm.D[:, None, None] * kv
        out.append((q[:, t].view(batch, heads, dh, 1) * z).sum(2).reshape(batch, width))
    return mixer.out_proj(torch.stack(out, dim=1))


@pytest.mark.parametrize("sizes", [[1] * 11, [5, 1, 1, 3, 1]])
def test_h3_parallel_equals_naive_and_stepwise(sizes):
    torch.manual_seed(0)
    mixer = H3Mixer(mixer_config("h3", num_attention_heads=4, ssm_state_size=8), 0).double().eval()
    with torch.no_grad():
        mixer.ssm.log_dt.uniform_(-4.0, 0.0)
        mixer.q_proj.weight.mul_(20)
        mixer.k_proj.weight.mul_(20)
        x = torch.randn(2, 11, 64, dtype=torch.float64)
        full = mixer(x)
        torch.testing.assert_close(full, naive_h3(mixer, x), rtol=1e-8, atol=1e-9)
        stepped, cache = stepwise(mixer, x, sizes)
    torch.testing.assert_close(stepped, full, rtol=1e-8, atol=1e-9)
    assert mixer.state_size() == cache.nbytes_per_sequence() // 2  # fp32 bytes; this state is fp64


@settings(max_examples=8, deadline=None)
@given(length=st.integers(1, 40), heads=st.sampled_from([1, 2, 4]), pad=st.integers(0, 5))
def test_h3_direct_form_equals_fft_form(length, heads, pad):
    """The short-sequence quadratic form ((q k̃ᵀ) ⊙ Toeplitz) v equals the FFT convolution, values and gradients,
    with left padding."""
    torch.manual_seed(length)
    mixer = H3Mixer(mixer_config("h3", num_attention_heads=heads, ssm_state_size=8), 0).double()
    with torch.no_grad():
        mixer.ssm.log_dt.uniform_(-4.0, 0.0)
    x = torch.randn(2, length, 64, dtype=torch.float64, requires_grad=True)
    mask = torch.ones(2, length, dtype=torch.bool)
    mask[1, : min(pad, length - 1)] = False
    inputs = [x] + [p for name, p in mixer.named_parameters() if not name.startswith("out_proj")]  # z is before W_o
    outputs, grads = [], []
    for threshold in (0, length):  # FFT form, then the direct form
        z = mixer.mix(x, mask, None, direct_max_length=threshold)[-1]
        outputs.append(z)
        grads.append(torch.autograd.grad((z * torch.linspace(-1, 1, z.numel()).view_as(z)).sum(), inputs))
    torch.testing.assert_close(outputs[1], outputs[0], rtol=1e-9, atol=1e-10)
    for direct, fft in zip(grads[1], grads[0]):
        torch.testing.assert_close(direct, fft, rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize(
    ("backend", "length", "expected"),
    [("auto", 600, "compiled"), ("auto", 2049, "fft"), ("torch", 600, "fft"), ("torch", 500, "blocked")],
)
def test_h3_default_threshold_follows_the_form_taken(backend, length, expected, monkeypatch):
    """Without an explicit `direct_max_length`, the quadratic form runs up to the threshold measured for the path the
    input takes: the compiled kernel to `COMPILED_DIRECT_MAX_LENGTH` (RegBench batches of 600 tokens stay off the
    FFT), the PyTorch blocked form to `DIRECT_MAX_LENGTH`; beyond, the FFT form."""
    import hf_icl.mixers.h3 as h3

    if h3.toeplitz_mix is None and expected == "compiled":
        pytest.fail("numba is a dependency of the package: the compiled Toeplitz mix must import")
    assert h3.DIRECT_MAX_LENGTH < 600 < h3.COMPILED_DIRECT_MAX_LENGTH < 2049
    monkeypatch.setenv("HF_ICL_SCAN_BACKEND", backend)
    taken = []
    monkeypatch.setattr(h3, "toeplitz_mix", lambda *a: taken.append("compiled") or torch.zeros(a[2].shape))
    monkeypatch.setattr(h3, "gated_toeplitz_mix", lambda *a: taken.append("blocked") or torch.zeros(a[2].shape))
    monkeypatch.setattr(DiagonalSSM, "forward", lambda self, kv, *a, **k: taken.append("fft") or torch.zeros_like(kv))
    mixer = H3Mixer(mixer_config("h3", num_attention_heads=2, ssm_state_size=4), 0)
    with torch.no_grad():
        mixer.mix(torch.randn(1, length, 64), None, None)
    assert taken == [expected]


def naive_hyena(mixer, x):
    """zⁿ = xⁿ ⊙ (lⁿ * z^{n−1} + bⁿ z^{n−1}) with the long convolutions as plain double loops."""
    width, order, length = mixer.width, mixer.order, x.shape[1]
    u = mixer.short_conv(mixer.in_proj(x))
    *gates, z = u.split(width, dim=-1)
    filters = mixer.filter(0, length).view(length, width, order)
    for n, gate in enumerate(gates):
        z = gate * (direct_conv(z, filters[:, :, n]) + mixer.conv_skip[:, n] * z)
    return mixer.out_proj(z)


@pytest.mark.parametrize("order", [1, 2, 3])
def test_hyena_parallel_equals_naive_and_stepwise(order, monkeypatch):
    torch.manual_seed(order)
    mixer = HyenaMixer(mixer_config("hyena", hyena_order=order), 0).double().eval()
    x = torch.randn(2, 12, 64, dtype=torch.float64)
    with torch.no_grad():
        full = mixer(x)
        torch.testing.assert_close(full, naive_hyena(mixer, x), rtol=1e-8, atol=1e-10)
        computed = []
        forward = type(mixer.filter).forward
        monkeypatch.setattr(type(mixer.filter), "forward", lambda f, a, b: computed.append(b - a) or forward(f, a, b))
        prefill_out = mixer(x[:, :4], cache=(cache := ICLCache(1)))
        # A decoding step is a dot product over the cached history: no FFT, no prefix reprocessing.
        monkeypatch.setattr("hf_icl.mixers.hyena.causal_fft_conv", lambda *a, **k: pytest.fail("FFT while decoding"))
        steps = [mixer(x[:, t : t + 1], cache=cache) for t in range(4, 12)]
    torch.testing.assert_close(torch.cat([prefill_out, *steps], dim=1), full, rtol=1e-8, atol=1e-10)
    assert sum(computed) <= 2 * 12  # filter entries are generated incrementally, not per step
    assert cache.layer_state(0).get("history_0").shape == (2, 12, 64)


def test_hyena_continues_from_the_cache_over_blocks():
    torch.manual_seed(0)
    mixer = HyenaMixer(mixer_config("hyena"), 0).double().eval()
    x = torch.randn(2, 12, 64, dtype=torch.float64)
    with torch.no_grad():
        stepped, _ = stepwise(mixer, x, [3, 4, 1, 2, 1, 1])
        torch.testing.assert_close(stepped, mixer(x), rtol=1e-8, atol=1e-10)


def test_hyena_filter_does_not_depend_on_the_input_length():
    torch.manual_seed(0)
    filt = HyenaMixer(mixer_config("hyena"), 0).filter
    long = filt(0, 300)
    torch.testing.assert_close(filt(0, 10), long[:10])
    torch.testing.assert_close(filt(123, 124)[0], long[123])
    with torch.no_grad():
        torch.testing.assert_close(filt.lags(7), long[:7].detach())
        torch.testing.assert_close(filt.lags(300), long.detach())
        filt.freq.add_(1.0)  # a parameter update invalidates the cached filter
        torch.testing.assert_close(filt.lags(5), filt(0, 5))


@pytest.mark.parametrize("arch", ["s4", "h3"])
def test_state_size_matches_cache(arch):
    model = hf_icl.modeling.decoder.ICLModel(mixer_config(arch)).eval()
    with torch.no_grad():
        out = model(torch.tensor([[1, 2, 3, 4, 5]]), use_cache=True)
    assert model.state_size() == out.cache.nbytes_per_sequence()
