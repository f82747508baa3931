"""Multi-scale retention (RetNet; Sun et al., 2023; paper 1, Appendix A.5, eqs. 32–42).

    q_i, k_j = RoPE(W_q x_i), RoPE(W_k x_j) ∈ R^{Dk},   v_j = W_v x_j ∈ R^{Dv}      (32, 33, 35)
    z_i = Σ_{j ≤ i} λ_h^{i−j} ⟨q_i, k_j⟩ v_j = q_i S_i,   S_i = λ_h S_{i−1} + k_iᵀ v_i  (34, 36, 41, 42)
    y_i = W_o (swish(W_r x_i) ⊙ GroupNorm(z_i))                                      (37, 38)

Choices taken from the RetNet paper and the reference code of paper 1 (a torchscale port):
- fixed per-head decays λ_h = 1 − 2^(−5−h), h = 0..H−1 (the "multi-scale" part); q scaled by 1/√Dk;
- values and the gate r are 2d wide (Dv = 2d/H), so W_q, W_k, W_v, W_r, W_o hold 8d², as the paper allocates;
- GroupNorm over each head's Dv outputs without affine parameters (the paper's GroupNorm, the reference code's
  per-head LayerNorm). Paper 1's eq. 38 omits it; we keep it because retention is unnormalised, and it makes the
  paper's parallel-form rescalings of D and of the scores unnecessary (the norm is invariant to them);
- RoPE (eq. 33; the paper's xPos without its extrapolation scaling) at sequence indices: the rotation only enters
  through q_i·k_j, i.e. through i − j, so left padding (whose keys are zeroed) and cached decoding agree.
"""

from __future__ import annotations

import torch

from .ops.linear_recurrence import GatedLinearRecurrenceMixer
from .positions import rope_rotate
from .registry import register_mixer
from .shared_fields import SCAN_CHUNK_SIZE


def retention_log_decay(num_heads: int, device=None) -> torch.Tensor:
    """log λ_h for λ_h = 1 − 2^(−5−h), h = 0..H−1, shaped (1, H, 1, 1)."""
    heads = torch.arange(num_heads, device=device, dtype=torch.float32)
    return torch.log1p(-(2.0 ** (-5.0 - heads))).view(1, num_heads, 1, 1)


@register_mixer("retention", config_fields=(SCAN_CHUNK_SIZE,))
class MultiScaleRetention(GatedLinearRecurrenceMixer):
    """RetNet's multi-scale retention with RoPE, fixed per-head decay, GroupNorm and a swish output gate.

    Args:
        config: an `ICLConfig` (uses hidden_size, num_attention_heads, use_bias, position_embedding, rope_theta,
            layer_norm_epsilon, scan_chunk_size). RoPE is applied when `position_embedding == "rope"`.
        layer_idx (`int`): index of the layer, used to find this layer's state in the cache.
    """

    reads_shared_fields = ("num_attention_heads", "rope_theta")  # ICLConfig.MIXER_ONLY_FIELDS it reads
    position_schemes = ("rope",)  # relative position_embedding values it applies

    def __init__(self, config, layer_idx: int):
        width = config.hidden_size
        super().__init__(config, layer_idx, key_width=width, value_width=2 * width, gate_bias=config.use_bias)

    def log_decay(self, hidden_states):
        return retention_log_decay(self.num_heads, hidden_states.device)  # (1, H, 1, 1)

    def rotate(self, query, key, cache):
        if self.config.position_embedding != "rope":
            return query, key
        past = cache.get_seq_length() if cache is not None else 0  # positions continue across cached calls
        return rope_rotate(query, key, past, self.config.rope_theta)
