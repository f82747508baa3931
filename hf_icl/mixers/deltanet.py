"""DeltaNet (Schlag et al., 2021; Yang et al., 2024, "Parallelizing Linear Transformers with the Delta Rule over
Sequence Length", eqs. 1–2 and §3, the chunked WY form).

The state is a fast-weight memory updated by one step of the delta rule per token, with learning rate β_t:

    S_t = S_{t−1} − β_t k_t (k_tᵀ S_{t−1} − v_tᵀ) = (I − β_t k_t k_tᵀ) S_{t−1} + β_t k_t v_tᵀ,   o_t = q_tᵀ S_t

with L2-normalised q and k, β_t = σ(W_β x_t) per head, SiLU short convolutions on q, k, v and an RMSNorm per head
before W_o, as flash-linear-attention's `DeltaNet` layer. Training runs the chunked form of `ops/delta_rule.py`
(UT transform: one triangular solve per chunk), decoding the O(Dk·Dv) step; on CUDA fla's `chunk_delta_rule` runs
the prefill in half precision when it imports.
Output maps: M_tj = q_tᵀ (I − β_t k_t k_tᵀ) ⋯ (I − β_{j+1} k_{j+1} k_{j+1}ᵀ) β_j k_j.
"""

from __future__ import annotations

from .ops.delta_rule import DeltaRuleMixer
from .registry import register_mixer
from .shared_fields import CONV_KERNEL, SCAN_CHUNK_SIZE


@register_mixer("deltanet", config_fields=(CONV_KERNEL, SCAN_CHUNK_SIZE))
class DeltaNet(DeltaRuleMixer):
    """DeltaNet token mixer: normalised keys, per-head learning rate β, delta-rule state update.

    Args:
        config: an `ICLConfig` (uses hidden_size, num_attention_heads, use_bias, conv_kernel, scan_chunk_size,
            layer_norm_epsilon).
        layer_idx (`int`): index of the layer, used to find this layer's state in the cache.
    """

    reads_shared_fields = ("num_attention_heads",)  # ICLConfig.MIXER_ONLY_FIELDS it reads

    def __init__(self, config, layer_idx: int):
        super().__init__(config, layer_idx, gated=False)
