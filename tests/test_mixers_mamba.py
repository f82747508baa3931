"""Mamba's selective scan and mixer: chunked scan ≡ plain recurrence (values and gradients), continuation, decoding
steps, memory linear in T, padding, initialisation, and the hybrid layouts."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import AutoModelForCausalLM

import hf_icl
from hf_icl.mixers.mamba import MambaMixer
from hf_icl.mixers.ops import selective_scan as scan_module
from hf_icl.mixers.ops.selective_scan import selective_scan, selective_state_update
from hf_icl.modeling.cache import MixerState


def plain_recurrence(x, delta, A, B, C, state=None):
    """h_t = exp(Δ_t A) ⊙ h_{t−1} + Δ_t x_t B_t, y_t = h_t C_t, one step at a time."""
    batch, length, channels = x.shape
    h = x.new_zeros(batch, channels, A.shape[1]) if state is None else state
    ys = []
    for t in range(length):
        h = torch.exp(delta[:, t, :, None] * A) * h + (delta[:, t] * x[:, t])[..., None] * B[:, t, None, :]
        ys.append((h * C[:, t, None, :]).sum(-1))
    return torch.stack(ys, dim=1), h


def random_inputs(batch, length, channels, state_size, delta_scale, decay_scale, seed, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, length, channels, generator=gen, dtype=dtype)
    delta = torch.rand(batch, length, channels, generator=gen, dtype=dtype) * delta_scale
    A = -torch.rand(channels, state_size, generator=gen, dtype=dtype) * decay_scale
    B = torch.randn(batch, length, state_size, generator=gen, dtype=dtype)
    C = torch.randn(batch, length, state_size, generator=gen, dtype=dtype)
    h0 = torch.randn(batch, channels, state_size, generator=gen, dtype=dtype)
    return x, delta, A, B, C, h0


@settings(max_examples=25, deadline=None)
@given(
    batch=st.integers(1, 3),
    length=st.integers(1, 40),
    chunk=st.integers(1, 17),
    channels=st.integers(1, 6),
    state_size=st.integers(1, 5),
    delta_scale=st.sampled_from([0.01, 1.0, 30.0]),  # 30 · A up to 50: decays down to exp(−1500), i.e. 0
    decay_scale=st.sampled_from([0.1, 5.0, 50.0]),
    with_state=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_chunked_scan_equals_plain_recurrence(
    batch, length, chunk, channels, state_size, delta_scale, decay_scale, with_state, seed
):
    x, delta, A, B, C, h0 = random_inputs(batch, length, channels, state_size, delta_scale, decay_scale, seed)
    h0 = h0 if with_state else None
    inputs = [t.requires_grad_() for t in (x, delta, A, B, C) + ((h0,) if with_state else ())]
    y, h = selective_scan(x, delta, A, B, C, initial_state=h0, chunk_size=chunk)
    y_ref, h_ref = plain_recurrence(x, delta, A, B, C, h0)
    torch.testing.assert_close(y, y_ref, atol=1e-10, rtol=1e-10)
    torch.testing.assert_close(h, h_ref, atol=1e-10, rtol=1e-10)
    weights = torch.randn_like(y), torch.randn_like(h)
    grads = torch.autograd.grad((y * weights[0]).sum() + (h * weights[1]).sum(), inputs)
    grads_ref = torch.autograd.grad((y_ref * weights[0]).sum() + (h_ref * weights[1]).sum(), inputs)
    for name, grad, grad_ref in zip(["x", "delta", "A", "B", "C", "h0"], grads, grads_ref):
        torch.testing.assert_close(grad, grad_ref, atol=1e-9, rtol=1e-9, msg=name)


def test_mixer_trains_under_bf16_autocast():
    # bf16 autocast for the projections; the scan and the short convolution run in float32
    torch.manual_seed(0)
    mixer = AutoModelForCausalLM.from_config(hf_icl.config_for("mamba", "tiny")).model.layers[0].mixer
    x = torch.randn(2, 23, mixer.in_proj.in_features, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = mixer(x)
    out.float().square().mean().backward()
    assert torch.isfinite(x.grad).all() and all(torch.isfinite(p.grad).all() for p in mixer.parameters())
    torch.testing.assert_close(out.float(), mixer(x).detach(), atol=0.05, rtol=0.05)


def test_float32_extreme_steps_stay_finite_and_exact():
    """Huge Δ·A (decay exp(−10⁴) underflows to 0) and tiny ones: no inf/NaN, agreement with the recurrence in fp32."""
    x, delta, A, B, C, _ = random_inputs(2, 50, 4, 3, 1.0, 1.0, seed=1, dtype=torch.float32)
    delta = torch.where(torch.rand_like(delta) < 0.3, torch.full_like(delta, 200.0), delta * 1e-4)
    A = A * 50
    y, h = selective_scan(x, delta, A, B, C, chunk_size=8)
    y_ref, h_ref = plain_recurrence(x, delta, A, B, C)
    assert torch.isfinite(y).all() and torch.isfinite(h).all()
    torch.testing.assert_close(y, y_ref, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(h, h_ref, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("split", [1, 7, 16, 29])
def test_scan_continues_from_its_final_state(split):
    x, delta, A, B, C, _ = random_inputs(2, 30, 5, 4, 1.0, 5.0, seed=2)
    y, h = selective_scan(x, delta, A, B, C, chunk_size=8)
    y1, h1 = selective_scan(x[:, :split], delta[:, :split], A, B[:, :split], C[:, :split], chunk_size=8)
    y2, h2 = selective_scan(x[:, split:], delta[:, split:], A, B[:, split:], C[:, split:], h1, chunk_size=8)
    torch.testing.assert_close(torch.cat([y1, y2], dim=1), y, atol=1e-12, rtol=0)
    torch.testing.assert_close(h2, h, atol=1e-12, rtol=0)


def test_state_update_chain_equals_scan():
    x, delta, A, B, C, h0 = random_inputs(3, 12, 5, 4, 2.0, 5.0, seed=3)
    y, h = selective_scan(x, delta, A, B, C, initial_state=h0, chunk_size=5)
    state, steps = h0, []
    for t in range(x.shape[1]):
        y_t, state = selective_state_update(state, x[:, t], delta[:, t], A, B[:, t], C[:, t])
        steps.append(y_t)
    torch.testing.assert_close(torch.stack(steps, dim=1), y, atol=1e-12, rtol=0)
    torch.testing.assert_close(state, h, atol=1e-12, rtol=0)


def saved_bytes(length):
    """Bytes autograd keeps between forward and backward for one scan of `length` steps (B=2, D=8, N=16)."""
    x, delta, A, B, C, _ = random_inputs(2, length, 8, 16, 1.0, 1.0, seed=4, dtype=torch.float32)
    for t in (x, delta, A, B, C):
        t.requires_grad_()
    total = []

    def pack(tensor):
        total.append(tensor.numel() * tensor.element_size())
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        selective_scan(x, delta, A, B, C, chunk_size=64)
    return sum(total)


def test_scan_memory_is_linear_in_length_without_the_state_dimension():
    # All per-step states would be B·T·D·N floats; the scan keeps inputs plus one state per chunk.
    length = 512
    assert saved_bytes(length) < 2 * length * 8 * 16 * 4 / 2
    assert saved_bytes(2 * length) <= 2 * saved_bytes(length) + 4096  # linear in T (up to the fixed A)


@pytest.mark.skipif(
    not torch.cuda.is_available() or scan_module.mamba_ssm_selective_scan is None,
    reason="mamba-ssm's selective_scan_fn needs CUDA and the mamba-ssm package (not importable here)",
)
def test_mamba_ssm_kernel_equals_pure_path():  # pragma: no cover - CUDA only
    x, delta, A, B, C, _ = random_inputs(2, 300, 16, 8, 0.5, 5.0, seed=5, dtype=torch.float32)
    cuda = [t.cuda().requires_grad_() for t in (x, delta, A, B, C)]
    y_kernel, h_kernel = selective_scan(*cuda)
    cpu = [t.requires_grad_() for t in (x, delta, A, B, C)]
    y_pure, h_pure = selective_scan(*cpu)
    torch.testing.assert_close(y_kernel.cpu(), y_pure, atol=1e-4, rtol=1e-3)
    torch.testing.assert_close(h_kernel.cpu(), h_pure, atol=1e-4, rtol=1e-3)
    weights = torch.randn_like(y_pure)
    grads_kernel = torch.autograd.grad((y_kernel * weights.cuda()).sum(), cuda)
    grads_pure = torch.autograd.grad((y_pure * weights).sum(), cpu)
    for grad_kernel, grad_pure in zip(grads_kernel, grads_pure):
        torch.testing.assert_close(grad_kernel.cpu(), grad_pure, atol=1e-3, rtol=1e-3)


class OneLayerCache:
    def __init__(self):
        self.state = MixerState()

    def layer_state(self, layer_idx):
        return self.state


def test_padded_position_leaves_the_ssm_state_unchanged():
    torch.manual_seed(0)
    mixer = AutoModelForCausalLM.from_config(hf_icl.config_for("mamba", "tiny")).model.layers[0].mixer
    hidden = torch.randn(2, 5, 64)
    ends_in_pad, without_pad = OneLayerCache(), OneLayerCache()
    with torch.no_grad():
        mixer(hidden, attention_mask=torch.tensor([[1, 1, 1, 1, 0]] * 2), cache=ends_in_pad)
        mixer(hidden[:, :4], cache=without_pad)
    state = without_pad.state.get("ssm_state")
    assert state.abs().max() > 0
    torch.testing.assert_close(ends_in_pad.state.get("ssm_state"), state, atol=0, rtol=1e-6)


def test_reference_initialisation_survives_model_init():
    model = AutoModelForCausalLM.from_config(hf_icl.config_for("mamba", "small"))
    mixer = model.model.layers[0].mixer
    assert isinstance(mixer, MambaMixer)
    ssm = mixer.ssm
    torch.testing.assert_close(-torch.exp(ssm.A_log), -torch.arange(1.0, 17.0).expand(256, 16))
    torch.testing.assert_close(ssm.D, torch.ones(256))
    dt = torch.nn.functional.softplus(ssm.dt_proj.bias)
    assert 1e-3 * 0.999 <= dt.min() and dt.max() <= 1e-1 * 1.001 and dt.max() / dt.min() > 10
    bound = ssm.dt_rank**-0.5
    assert ssm.dt_proj.weight.abs().max() <= bound and ssm.dt_proj.weight.std() > bound / 3  # not normal(0, 0.02)
    assert mixer.conv.conv.weight.abs().max() > 0.3  # PyTorch's default conv init (bound 1/√4), not normal(0, 0.02)
    assert mixer.state_size() == (3 * 256 + 256 * 16) * 4  # conv window + SSM state, fp32


@pytest.mark.parametrize(
    "arch, preset, overrides, mixers, ffns",
    [
        ("mambaformer", "tiny", {}, ["mamba", "attention", "mamba", "attention"], ["none"] * 4),
        ("mambaformer", "tiny", {"num_hidden_layers": 3}, ["mamba", "attention", "mamba"], ["none"] * 3),
        ("mambaformer", "tf_initial_mamba", {}, ["mamba"] + ["attention"] * 3, ["none", "mlp", "mlp", "mlp"]),
        ("mambaformer", "tf_initial_mamba", {"num_hidden_layers": 2}, ["mamba", "attention"], ["none", "mlp"]),
        ("standard_hybrid", "tiny", {}, ["attention", "mamba"] * 2, ["none"] * 4),
        ("mamba", "mamba_hybrid_middle", {}, ["mamba"] * 3 + ["attention"] + ["mamba"] * 4, ["none"] * 8),
        ("s4_mamba", "tiny", {}, ["s4_mamba"] * 3, ["none"] * 3),
    ],
)
def test_hybrid_layouts(arch, preset, overrides, mixers, ffns):
    config = hf_icl.config_for(arch, preset, **overrides)
    assert (config.mixer_types, config.ffn_types) == (mixers, ffns)
