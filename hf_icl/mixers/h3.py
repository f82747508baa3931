"""H3 token mixer (Fu et al., 2023, "Hungry Hungry Hippos", §3; paper 1, Appendix A.10, eqs. 79–85).

Per head i with head dimension d_h = d / H:

    q, k, v = W_q x, W_k x, W_v x                                   (eq. 79, 83)
    k̃ = shift-SSM(k): a short causal depthwise convolution           (H3 §3.1)
    x'_t = k̃_tᵀ v_t ∈ R^{d_h × d_h}                                  (eq. 80)
    S_t = Ā ⊙ S_{t−1} + B̄ ⊙ x'_t,   z'_t = C ∘ S_t (+ D x'_t)        (eq. 81–82, a diagonal SSM, S4D-Lin)
    z_t = q_tᵀ z'_t ∈ R^{d_h},   y = W_o z                           (eq. 84–85)

As in the reference H3 layer (HazyResearch/H3 `H3`, used by paper 1's code), the diagonal SSM's parameters are
shared by the d_h × d_h entries of a head (H independent SSMs); each entry keeps its own state. The shift SSM
(reference: a shift-matrix SSM, i.e. a learned FIR filter, plus a skip D) is a `conv_kernel`-tap depthwise
convolution plus D ⊙ k. Training: short conv + FFT convolution; decoding: conv window + SSM recurrence,
O(d · d_h · N) per token.

Short sequences without a cache (T ≤ `DIRECT_MAX_LENGTH`) skip the FFT over the H·d_h² outer-product channels:
z_t = Σ_j (q_t · k̃_j)(K_h[t − j] + D_h δ_tj) v_j, the same sum as attention with the Toeplitz kernel as a
multiplicative mask, O(T² d) instead of O(T log T · d · d_h). On plain CPU tensors with numba (under
`HF_ICL_SCAN_BACKEND`) a compiled kernel runs it over j ≤ t only, without (T, T) maps (`ops/toeplitz_numba.py`), up
to T = `COMPILED_DIRECT_MAX_LENGTH`; otherwise it is computed a few batch rows at a time so that the maps stay in
cache (`ops/gated_toeplitz.py`), up to T = `DIRECT_MAX_LENGTH`. Both thresholds are measured by
`benchmarks/h3_short_form.py` (RegBench's length-grouped batches reach 600+ tokens, where the FFT form cost a zoo
run 3-4x its compiled direct form).
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import initialization as init

from .ops.cpu_paths import compiled_backend
from .ops.diagonal_ssm import DiagonalSSM
from .ops.gated_toeplitz import gated_toeplitz_mix
from .ops.mixing_maps import MixingMap, causal_key_mask, report_mixing_map
from .ops.padding import token_mask, zero_padding
from .ops.residual import residual_projection
from .ops.short_conv import CausalDepthwiseConv
from .registry import register_mixer
from .shared_fields import CONV_KERNEL, SSM_STATE_SIZE

try:
    from .ops.toeplitz_numba import toeplitz_mix
except ImportError:  # numba is missing: the blocked matmul form
    toeplitz_mix = None

DIRECT_MAX_LENGTH = 512  # longest uncached input mixed by the PyTorch quadratic form (measured: module docstring)
COMPILED_DIRECT_MAX_LENGTH = 2048  # the same for the compiled quadratic form


@register_mixer("h3", config_fields=(SSM_STATE_SIZE, CONV_KERNEL))
class H3Mixer(nn.Module):
    """Multi-head H3: shift-SSM on the keys, diagonal SSM over the per-head key–value outer products.

    Args:
        config: an `ICLConfig` (uses hidden_size, num_attention_heads, ssm_state_size, conv_kernel, use_bias).
        layer_idx (`int`): index of the layer, used to find this layer's state in the cache.
    """

    reads_shared_fields = ("num_attention_heads",)  # ICLConfig.MIXER_ONLY_FIELDS it reads

    recurrent = True  # shift window + diagonal SSM state
    returns_attention_maps = False
    mixing_maps = True  # per head: (q_t · k̃_j) (K_h[t − j] + D_h δ_tj), a Toeplitz kernel times gates
    map_axis = "heads"

    def __init__(self, config, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx
        width = config.hidden_size
        self.num_heads = config.num_attention_heads
        self.head_dim = width // self.num_heads
        self.q_proj = nn.Linear(width, width, bias=config.use_bias)
        self.k_proj = nn.Linear(width, width, bias=config.use_bias)
        self.v_proj = nn.Linear(width, width, bias=config.use_bias)
        self.shift = CausalDepthwiseConv(width, config.conv_kernel, bias=False)
        self.shift_skip = nn.Parameter(torch.empty(width))  # the shift SSM's D
        self.ssm = DiagonalSSM(self.num_heads, config.ssm_state_size)
        self.reset_mixer_parameters()
        self.out_proj = residual_projection(nn.Linear(width, width, bias=config.use_bias))

    @torch.no_grad()
    def reset_mixer_parameters(self) -> None:
        # The reference draws the shift SSM's C (its taps) and D from N(0, 1); the diagonal SSM resets itself.
        init.normal_(self.shift.conv.weight, 0.0, 1.0)
        init.normal_(self.shift_skip, 0.0, 1.0)

    def state_size(self) -> int:
        return self.shift.state_bytes() + self.ssm.state_bytes(copies=self.head_dim**2)

    def mix(self, hidden_states, mask, state, direct_max_length: int | None = None):
        """q, the shifted keys k̃ and v (B, T, H, D) and z = q_tᵀ SSM(k̃ vᵀ)_t (B, T, H, D), before W_o.

        Without a state and with T ≤ `direct_max_length` (default: the measured threshold of the form this input
        takes, `COMPILED_DIRECT_MAX_LENGTH` or `DIRECT_MAX_LENGTH`), z is the quadratic form ((q k̃ᵀ) ⊙ Toeplitz) v.
        """
        batch, length, width = hidden_states.shape
        heads, head_dim = self.num_heads, self.head_dim
        q = self.q_proj(hidden_states).view(batch, length, heads, head_dim, 1)
        k = zero_padding(self.k_proj(hidden_states), mask)  # (B, T, d): padding never enters the windows
        v = zero_padding(self.v_proj(hidden_states), mask)
        k = self.shift(k, state, name="shift_window", skip=self.shift_skip)  # (B, T, d): conv(k) + D ⊙ k
        direct = self.direct_form(length, state, direct_max_length, q, k, v)
        if direct is not None:
            q, k, v = (t.reshape(batch, length, heads, head_dim) for t in (q, k, v))  # (B, T, H, D)
            if direct == "numba":  # tokens first, as the projections write them
                return q, k, v, toeplitz_mix(q, k, v, self.ssm.toeplitz_lags(length)).to(v.dtype)  # z: (B, T, H, D)
            heads_first = [t.transpose(1, 2) for t in (q, k, v)]  # (B, H, T, D)
            z = gated_toeplitz_mix(*heads_first, self.ssm.toeplitz_map(length))
            return q, k, v, z.transpose(1, 2).to(v.dtype)  # z: (B, T, H, D)
        kv = k.view(batch, length, heads, head_dim, 1) * v.view(batch, length, heads, 1, head_dim)  # (B, T, H, D, D)
        z = self.ssm(kv, state, prefix="kv_ssm")  # (B, T, H, D, D)
        z = (q * z).sum(dim=3)  # (B, T, H, D): q_iᵀ z'_i
        return q[..., 0], k.view(batch, length, heads, head_dim), v.view(batch, length, heads, head_dim), z

    @staticmethod
    def direct_form(length: int, state, direct_max_length: int | None, *tensors) -> str | None:
        """The quadratic form's path for q, k̃, v (`"numba"` or `"torch"`), or None where the FFT form runs: with a
        state (decoding), and above the length threshold (`direct_max_length`, or the path's measured one)."""
        limit = COMPILED_DIRECT_MAX_LENGTH if direct_max_length is None else direct_max_length
        if state is not None or length > limit:
            return None
        backend = compiled_backend(toeplitz_mix is not None, *tensors)
        if direct_max_length is None and backend == "torch" and length > DIRECT_MAX_LENGTH:
            return None
        return backend

    def gated_toeplitz(self, q, k, length):
        """(q_t · k̃_j)(K_h[t − j] + D_h δ_tj) for j ≤ t: (B, H, T, T) from q, k̃ (B, H, T, D)."""
        return (q @ k.transpose(-1, -2)) * self.ssm.toeplitz_map(length)[None]

    def mixing_map(self, hidden_states, mask=None) -> MixingMap:
        # z from the FFT form (direct_max_length=0), so that maps @ v = z checks the map against the convolution
        q, k, v, z = (t.transpose(1, 2) for t in self.mix(hidden_states, mask, None, direct_max_length=0))
        length = q.shape[2]
        maps = self.gated_toeplitz(q, k, length) * causal_key_mask(mask, length, q.device)  # (B, H, T, T)
        return MixingMap(maps, v, z)

    def forward(
        self, hidden_states, attention_mask=None, cache=None, input_ids=None, position_ids=None, recorder=None, **kw
    ):
        batch, length, width = hidden_states.shape
        report_mixing_map(self, hidden_states, attention_mask, cache, recorder)
        state = cache.layer_state(self.layer_idx) if cache is not None else None
        z = self.mix(hidden_states, token_mask(attention_mask, length), state)[-1]
        return self.out_proj(z.reshape(batch, length, width))  # (B, T, d)
