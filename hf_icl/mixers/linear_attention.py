"""Linear attention (Katharopoulos et al., 2020; paper 1, Appendix A.4, eqs. 24–31), identity feature map.

    q_i, k_j, v_j = W_q x_i, W_k x_j, W_v x_j          (24, 26)
    z_i = Σ_{j ≤ i} ⟨q_i, k_j⟩ v_j                      (25, 27: scores are not normalised)
        = q_i S_i,   S_i = S_{i−1} + k_iᵀ v_i           (30, 31)
    y_i = W_o z_i                                       (28)

per head, with q scaled by 1/√Dk as in flash-linear-attention's `chunk_linear_attn` (the reference the later
linear-attention papers use). Training runs the chunked form and decoding the O(Dk·Dv) recurrent step, both from
`ops.linear_recurrence`; the state is S (B, H, Dk, Dv).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .ops.heads import FusedQKVMixer
from .ops.linear_recurrence import linear_recurrence, linear_recurrence_map
from .ops.mixing_maps import MixingMap, report_mixing_map
from .ops.padding import token_mask
from .registry import register_mixer
from .shared_fields import SCAN_CHUNK_SIZE


@register_mixer("linear_attention", config_fields=(SCAN_CHUNK_SIZE,))
class LinearAttention(FusedQKVMixer):
    """Multi-head causal linear attention with a fused QKV projection and no decay.

    Args:
        config: an `ICLConfig` (uses hidden_size, num_attention_heads, use_bias, scan_chunk_size).
        layer_idx (`int`): index of the layer, used to find this layer's state in the cache.
    """

    reads_shared_fields = ("num_attention_heads",)  # ICLConfig.MIXER_ONLY_FIELDS it reads

    recurrent = True  # decoding updates the fixed-size S
    returns_attention_maps = False  # scores are not normalised: the exact map comes from `mixing_map`
    mixing_maps = True
    map_axis = "heads"

    def __init__(self, config, layer_idx: int):
        super().__init__(config, layer_idx)
        self.chunk_size = config.scan_chunk_size

    def state_size(self) -> int:
        return self.num_heads * self.head_dim * self.head_dim * 4  # S in float32

    def mixing_map(self, hidden_states, mask=None) -> MixingMap:
        """M_tj = q_t · k_j for j ≤ t (unnormalised, eq. 25) on z = M v, before W_o."""
        query, key, value = self.coefficients(hidden_states)
        out = linear_recurrence(query, key, value, mask=mask, chunk_size=self.chunk_size)
        return MixingMap(linear_recurrence_map(query, key, None, mask), value, out)

    def forward(
        self, hidden_states, attention_mask=None, cache=None, input_ids=None, position_ids=None, recorder=None, **kw
    ):
        report_mixing_map(self, hidden_states, attention_mask, cache, recorder)
        length = hidden_states.shape[1]
        query, key, value = self.coefficients(hidden_states)
        out = linear_recurrence(
            query,
            key,
            value,
            mask=token_mask(attention_mask, length),
            state=cache.layer_state(self.layer_idx) if cache is not None else None,
            chunk_size=self.chunk_size,
        )  # (B, H, T, D)
        return self.merge_heads(out.transpose(1, 2))  # (B, T, d)

    def coefficients(self, hidden_states):
        """q (scaled by 1/√D), k, v: each (B, H, T, D)."""
        batch, length, width = hidden_states.shape
        # 1/√D folded into the query rows of W_qkv (the recurrence is linear in q): no pass over q and its gradient
        scale = torch.ones(3, width, 1, dtype=hidden_states.dtype, device=hidden_states.device)
        scale[0] = self.head_dim**-0.5
        weight, bias = self.qkv_proj.weight, self.qkv_proj.bias
        qkv = F.linear(hidden_states, weight * scale.view(-1, 1), None if bias is None else bias * scale.view(-1))
        qkv = qkv.view(batch, length, 3, self.num_heads, self.head_dim)  # (B, T, 3, H, D)
        return tuple(part.transpose(1, 2) for part in qkv.unbind(2))  # each (B, H, T, D)
