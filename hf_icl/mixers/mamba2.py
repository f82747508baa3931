"""Mamba-2 (Dao & Gu, 2024, "Transformers are SSMs", §6–7 and Listing 1): the SSD layer.

The selective SSM with a scalar decay per head (A = −exp(A_log) ∈ R per head instead of Mamba's (D, N) matrix),
so the whole layer is one semiseparable matrix per head (§3, eq. 6), the "SSD matrix":

    h_t = exp(Δ_t A_h) h_{t−1} + Δ_t B_t x_tᵀ,   y_t = C_tᵀ h_t + D_h x_t          (h_t ∈ R^{N×P} per head)
    M_tj = (C_t · B_j) exp(Σ_{s=j+1..t} Δ_s A_h) Δ_j  (j ≤ t),   y = M x + D x

As `mamba_ssm.modules.mamba2.Mamba2` (one group, `ngroups=1`): in_proj d → (z, x, B, C, Δ) with d_inner = 2d and
heads of P = `mamba2_head_dim`; a SiLU causal depthwise convolution over (x, B, C); Δ = softplus(· + Δ_bias);
y = W_out RMSNorm(y ⊙ SiLU(z)) (`ops.gated_rms_norm`: one compiled pass each way on the CPU). The SSD recurrence
is linear attention with a per-head decay (q = C, k = B, v = Δ x, g = Δ A), so `ops.linear_recurrence` runs it: on
the CPU the compiled kernel of `ops.shared_key_numba` (C and B are passed with one head, read once for all heads),
elsewhere the chunked form (mamba-ssm's `ssd_minimal` blocks: intra-chunk masked products, inter-chunk states; every
decay exp(b_t − b_j) ≤ 1), decoding its O(N·P) step, and on CUDA fla's `chunk_simple_gla` kernel when it imports.
Padding: Δ = 0 and zeroed conv inputs at padded positions, so they neither write nor decay the state.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from transformers import initialization as init

from .ops.gated_rms_norm import gated_rms_norm
from .ops.linear_recurrence import linear_recurrence
from .ops.mixing_maps import MixingMap, causal_key_mask, report_mixing_map
from .ops.padding import token_mask, zero_padding
from .ops.residual import residual_projection
from .ops.short_conv import CausalDepthwiseConv
from .registry import ConfigField, positive_int, register_mixer
from .shared_fields import CONV_KERNEL, SCAN_CHUNK_SIZE, SSM_STATE_SIZE

MAMBA2_FIELDS = (
    SSM_STATE_SIZE,
    CONV_KERNEL,
    ConfigField("mamba2_head_dim", 32, "head width P of Mamba-2 (d_inner = 2d is split into heads of P)",
                check=positive_int),
    SCAN_CHUNK_SIZE,
)  # fmt: skip


@register_mixer("mamba2", config_fields=MAMBA2_FIELDS)
class Mamba2Mixer(nn.Module):
    """Mamba-2 mixer: in_proj → conv(x, B, C) → SiLU → SSD with a scalar decay per head → gated RMSNorm → out_proj.

    Args:
        config: an `ICLConfig` (uses hidden_size, ssm_state_size, conv_kernel, mamba2_head_dim, scan_chunk_size,
            layer_norm_epsilon).
        layer_idx (`int`): index of the layer, used to find this layer's state in the cache.
    """

    recurrent = True  # convolution window + SSM state
    returns_attention_maps = False
    mixing_maps = True
    map_axis = "heads"

    @staticmethod
    def check_config(config) -> None:
        if (2 * config.hidden_size) % config.mamba2_head_dim:
            raise ValueError(
                f"mamba2_head_dim={config.mamba2_head_dim} must divide d_inner = 2 * hidden_size = "
                f"{2 * config.hidden_size}"
            )

    def __init__(self, config, layer_idx: int):
        super().__init__()
        self.layer_idx, self.chunk_size, self.eps = layer_idx, config.scan_chunk_size, config.layer_norm_epsilon
        self.inner, self.state_dim = 2 * config.hidden_size, config.ssm_state_size
        self.head_dim = config.mamba2_head_dim
        self.num_heads = self.inner // self.head_dim
        self.in_proj = nn.Linear(config.hidden_size, 2 * self.inner + 2 * self.state_dim + self.num_heads, bias=False)
        self.conv = CausalDepthwiseConv(self.inner + 2 * self.state_dim, config.conv_kernel)
        self.A_log = nn.Parameter(torch.empty(self.num_heads))
        self.D = nn.Parameter(torch.empty(self.num_heads))
        self.dt_bias = nn.Parameter(torch.empty(self.num_heads))
        self.norm_weight = nn.Parameter(torch.ones(self.inner))
        self.out_proj = residual_projection(nn.Linear(self.inner, config.hidden_size, bias=False))

    @torch.no_grad()
    def reset_mixer_parameters(self) -> None:
        """mamba-ssm's Mamba2 init: A ~ U(1, 16), D = 1, Δ log-uniform in [1e-3, 1e-1], default Conv1d init."""
        conv = self.conv.conv
        init.kaiming_uniform_(conv.weight, a=math.sqrt(5))
        init.uniform_(conv.bias, -(conv.kernel_size[0] ** -0.5), conv.kernel_size[0] ** -0.5)
        init.copy_(self.A_log, torch.empty(self.num_heads).uniform_(1, 16).log())
        init.ones_(self.D)
        dt = torch.exp(torch.rand(self.num_heads) * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3)).clamp(min=1e-4)
        init.copy_(self.dt_bias, dt + torch.log(-torch.expm1(-dt)))
        init.ones_(self.norm_weight)

    def state_size(self) -> int:
        return self.conv.state_bytes() + self.num_heads * self.state_dim * self.head_dim * 4

    def coefficients(self, hidden_states, mask, state):
        """x (B, H, T, P), B and C (B, 1, T, N), Δ (B, H, T, 1), the gate z (B, T, d_inner)."""
        batch, length, _ = hidden_states.shape
        # in_proj as two products, (z, x, B, C) and Δ: CPU BLAS runs an output width such as 388 (2·128 + 2·64 + 4
        # heads) far slower than 384 + 4 (a loaded one-thread A/B at the tiny preset: forward 17.1 → 10.9 ms)
        wide = 2 * self.inner + 2 * self.state_dim
        zxbc = F.linear(hidden_states, self.in_proj.weight[:wide])  # (B, T, 2·d_inner + 2N)
        dt = F.linear(hidden_states, self.in_proj.weight[wide:])  # (B, T, H)
        z, xbc = zxbc.split([self.inner, self.inner + 2 * self.state_dim], -1)
        xbc = zero_padding(F.silu(self.conv(zero_padding(xbc, mask), state)), mask)  # (B, T, d_inner + 2N)
        x, B, C = xbc.split([self.inner, self.state_dim, self.state_dim], dim=-1)
        x = x.reshape(batch, length, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, T, P)
        delta = zero_padding(F.softplus(dt.float() + self.dt_bias), mask).transpose(1, 2)[..., None]  # (B, H, T, 1)
        return x, B[:, None], C[:, None], delta, z

    def log_decay(self, delta):
        return -self.A_log.float().exp()[:, None, None] * delta  # Δ A_h ≤ 0, (B, H, T, 1)

    def finish(self, y, z):
        y = y.transpose(1, 2).reshape(*z.shape)  # (B, T, d_inner)
        return self.out_proj(gated_rms_norm(y, z, self.norm_weight, self.eps, gate_first=True))

    def forward(
        self, hidden_states, attention_mask=None, cache=None, input_ids=None, position_ids=None, recorder=None, **kw
    ):
        mask = token_mask(attention_mask, hidden_states.shape[1])
        report_mixing_map(self, hidden_states, attention_mask, cache, recorder)
        state = cache.layer_state(self.layer_idx) if cache is not None else None
        x, B, C, delta, z = self.coefficients(hidden_states, mask, state)
        y = self.ssd(x, B, C, delta, mask, state)
        return self.finish(y, z)

    def ssd(self, x, B, C, delta, mask, state):
        y = linear_recurrence(C, B, (x * delta).to(x.dtype), self.log_decay(delta), mask, state, self.chunk_size)
        return y + self.D[:, None, None] * x  # (B, H, T, P)

    def mixing_map(self, hidden_states, mask=None) -> MixingMap:
        """The SSD matrix per head (§3, eq. 6) plus D on the diagonal, from float64 prefix sums of Δ A."""
        x, B, C, delta, z = self.coefficients(hidden_states, mask, None)
        length = x.shape[2]
        cum = self.log_decay(delta).double().cumsum(2)[..., 0]  # (B, H, T)
        decay = (cum[..., :, None] - cum[..., None, :]).float()  # (B, H, T, T), ≤ 0 where j ≤ t
        allowed = causal_key_mask(mask, length, x.device)
        decay = decay.masked_fill(allowed == 0, float("-inf")).exp()
        maps = (C @ B.transpose(-1, -2)) * decay * delta.transpose(-1, -2)  # (C_t·B_j) e^{…} Δ_j
        maps = (maps + torch.diag_embed(self.D[:, None].expand(self.num_heads, length))) * allowed
        return MixingMap(maps, x, self.ssd(x, B, C, delta, mask, None))
