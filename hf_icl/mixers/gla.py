"""Gated linear attention (GLA; Yang et al., 2023; paper 1, Appendix A.6, eqs. 43–49).

    q_i, k_j = W_q x_i, W_k x_j ∈ R^{Dk},   v_j = W_v x_j ∈ R^{Dv}                   (43, 45)
    α_i = σ(x_i W_α1 W_α2 + b_α)^{1/16} ∈ (0, 1)^{Dk},   β_i = 1                     (44, GLA paper §4.4)
    S_i = (α_iᵀ 1) ⊙ S_{i−1} + k_iᵀ v_i,   z_i = q_i S_i                              (46, 47)
    y_i = W_o (swish(W_r x_i + b_r) ⊙ LN_head(z_i))                                   (48, 49)

The GLA paper's parameterisation: a low-rank gate (W_α1: d × `gate_low_rank`, W_α2: `gate_low_rank` × d/2) with
temperature τ = 16 for a slower forgetting rate; β fixed to 1 (the GLA paper's choice); key width d/2 and value width
d in total (Dk = d/(2H), Dv = d/H), so the mixer holds about 4d² like attention; q scaled by 1/√Dk as in
flash-linear-attention's `chunk_gla`; each head's output normalised without affine parameters (the per-head
LayerNorm of the GLA paper and of paper 1's reference code). The decay is per key dimension, so training uses the
per-dimension path of `ops.linear_recurrence.chunked_linear_attention`.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import nn

from .ops.linear_recurrence import GatedLinearRecurrenceMixer
from .registry import ConfigField, positive_int, register_mixer
from .shared_fields import SCAN_CHUNK_SIZE

GATE_TEMPERATURE = 16.0  # τ in α = σ(·)^{1/τ}
GATE_LOW_RANK = ConfigField("gate_low_rank", 16, "rank of GLA's data-dependent decay projection", check=positive_int)


@register_mixer("gla", config_fields=(GATE_LOW_RANK, SCAN_CHUNK_SIZE))
class GatedLinearAttention(GatedLinearRecurrenceMixer):
    """GLA token mixer: data-dependent per-key-dimension decay α, swish output gate, per-head norm.

    Args:
        config: an `ICLConfig` (uses hidden_size, num_attention_heads, use_bias, gate_low_rank,
            layer_norm_epsilon, scan_chunk_size).
        layer_idx (`int`): index of the layer, used to find this layer's state in the cache.
    """

    reads_shared_fields = ("num_attention_heads",)  # ICLConfig.MIXER_ONLY_FIELDS it reads

    def __init__(self, config, layer_idx: int):
        width, rank = config.hidden_size, config.gate_low_rank
        super().__init__(config, layer_idx, key_width=width // 2, value_width=width, gate_bias=True)
        self.gk_proj = nn.Sequential(nn.Linear(width, rank, bias=False), nn.Linear(rank, width // 2))  # W_α1 W_α2 + b_α

    def log_decay(self, hidden_states):
        log_alpha = F.logsigmoid(self.gk_proj(hidden_states)) / GATE_TEMPERATURE  # (B, T, H·Dk): log α ≤ 0
        return log_alpha.view(*hidden_states.shape[:2], self.num_heads, -1).transpose(1, 2)  # (B, H, T, Dk)
