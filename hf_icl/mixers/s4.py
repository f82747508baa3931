"""S4D token mixer (Gu et al., 2022, "On the parameterization and initialization of diagonal state space models";
paper 1, Appendix A.9, eqs. 73–78).

d independent diagonal SSMs, one per channel of x (eq. 77–78: S_i = Ā ∘ S_{i−1} + B̄ ∘ x_i, y_i = C ∘ S_i),
followed, as in the reference S4D layer that paper 1's code uses (safari `S4D`, `activation="gelu"`,
`postact=None`), by a GELU and a position-wise output projection:

    y = W_o GELU(K * x + D ⊙ x)

Training runs the FFT convolution with the kernel K (eq. 75–76); decoding runs the recurrence, O(d·N) per token.
"""

from __future__ import annotations

from torch import nn

from .ops.diagonal_ssm import DiagonalSSM
from .ops.mixing_maps import MixingMap, causal_key_mask, report_mixing_map
from .ops.padding import token_mask, zero_padding
from .ops.residual import residual_projection
from .registry import register_mixer
from .shared_fields import SSM_STATE_SIZE


@register_mixer("s4", config_fields=(SSM_STATE_SIZE,))
class S4DMixer(nn.Module):
    """S4D layer: per-channel diagonal SSM → GELU → output projection.

    Args:
        config: an `ICLConfig` (uses hidden_size, ssm_state_size, use_bias).
        layer_idx (`int`): index of the layer, used to find this layer's state in the cache.
    """

    recurrent = True  # the diagonal SSM state
    returns_attention_maps = False
    mixing_maps = True  # one Toeplitz map per channel: K_{t−j} + D δ_tj
    map_axis = "channels"

    def __init__(self, config, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx
        self.ssm = DiagonalSSM(config.hidden_size, config.ssm_state_size)
        self.act = nn.GELU()
        self.out_proj = residual_projection(nn.Linear(config.hidden_size, config.hidden_size, bias=config.use_bias))

    def state_size(self) -> int:
        return self.ssm.state_bytes()

    def mixing_map(self, hidden_states, mask=None) -> MixingMap:
        """Per channel c: M_tj = K_c[t − j] + D_c δ_tj (eq. 75–76) on the input, before the GELU."""
        x = zero_padding(hidden_states, mask)  # (B, T, d)
        maps = self.ssm.toeplitz_map(x.shape[1])[None] * causal_key_mask(mask, x.shape[1], x.device)
        maps = maps.expand(x.shape[0], -1, -1, -1)  # (B, d, T, T)
        values, output = (t.transpose(1, 2)[..., None] for t in (x, self.ssm(x)))  # (B, d, T, 1)
        return MixingMap(maps, values, output)

    def forward(
        self, hidden_states, attention_mask=None, cache=None, input_ids=None, position_ids=None, recorder=None, **kw
    ):
        report_mixing_map(self, hidden_states, attention_mask, cache, recorder)
        x = zero_padding(hidden_states, token_mask(attention_mask, hidden_states.shape[1]))  # (B, T, d)
        state = cache.layer_state(self.layer_idx) if cache is not None else None
        y = self.ssm(x, state)  # (B, T, d)
        return self.out_proj(self.act(y))  # (B, T, d)
