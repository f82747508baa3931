"""Gated DeltaNet (Yang, Kautz & Hatamizadeh, 2025, "Gated Delta Networks: Improving Mamba2 with Delta Rule",
eq. 10 and §3.3, the chunked form with decays).

Mamba-2's scalar gate α_t on top of the delta rule:

    S_t = α_t (I − β_t k_t k_tᵀ) S_{t−1} + β_t k_t v_tᵀ,   o_t = q_tᵀ S_t
    α_t = exp(−exp(A_log) · softplus(W_α x_t + b_dt)) ∈ (0, 1] per head,   β_t = σ(W_β x_t)

with flash-linear-attention's `GatedDeltaNet` layer around it: L2-normalised q and k, SiLU short convolutions,
A ~ U(0, 16) and Mamba's Δ initialisation, y = W_o (RMSNorm_head(o) ⊙ SiLU(W_g x)). Training: the chunked form of
`ops/delta_rule.py` with (C, C) decay masks exp(b_t − b_j) ≤ 1 (any gate strength); decoding: the O(Dk·Dv) step; on
CUDA fla's `chunk_gated_delta_rule` runs the prefill in half precision when it imports.
"""

from __future__ import annotations

from .ops.delta_rule import DeltaRuleMixer
from .registry import register_mixer
from .shared_fields import CONV_KERNEL, SCAN_CHUNK_SIZE


@register_mixer("gated_deltanet", config_fields=(CONV_KERNEL, SCAN_CHUNK_SIZE))
class GatedDeltaNet(DeltaRuleMixer):
    """Gated DeltaNet token mixer: the delta rule with a data-dependent scalar decay per head and an output gate.

    Args:
        config: an `ICLConfig` (uses hidden_size, num_attention_heads, use_bias, conv_kernel, scan_chunk_size,
            layer_norm_epsilon).
        layer_idx (`int`): index of the layer, used to find this layer's state in the cache.
    """

    reads_shared_fields = ("num_attention_heads",)  # ICLConfig.MIXER_ONLY_FIELDS it reads

    def __init__(self, config, layer_idx: int):
        super().__init__(config, layer_idx, gated=True)
