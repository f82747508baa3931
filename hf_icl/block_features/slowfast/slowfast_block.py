"""The two-stream block of the slow/fast Transformer (P3, Learning Fast and Slow, §3.4 and App. C; DESIGN §5.7).

Block ν holds the fast block on x — the skeleton's GPT-2 `DecoderBlock` of width d_x, unchanged — and either

- (ν < ℓ) the slow stream: h_y heads and an MLP that read the whole state [x, y] and write y (App. C),

      k^y = K^y [x̂, ŷ],  q^y = Q^y [x̂, ŷ],  v^y = V^y [x̂, ŷ],   y ← y + W_2^y σ(W_1^y [x̂, ŷ])

  with x̂, ŷ normalised separately (one norm per stream); x never reads y, so x^ν for ν ≤ ℓ is independent of y;
- (ν ≥ ℓ) the modulation: T(x̂; y^ℓ) = x̂ + L̂(y^ℓ) R̂(y^ℓ)ᵀ x̂ on the *normalised* input of attention and of the
  MLP (DESIGN §5.7.3), so a frozen y folds into the q/k/v and first MLP matrices (`mixers/modulation.py`).

The slow heads keep their keys and values in their own cache slot, after the L regular layers.
"""

from __future__ import annotations

import torch
from torch import nn

from ...mixers.attention import CausalSelfAttention
from ...mixers.modulation import LowRankModulation
from ...modeling.layers import MLP, DecoderBlock, build_norm


class SlowStreamConfig:
    """The model config as the slow stream's heads, MLP and norms see it: width d_y, h_y heads, FFN width i_y.

    Every other field (and `_attn_implementation`, set later by transformers) is read from, and written to, the
    model's config.

    Args:
        config: an `ICLSlowFastTransformerConfig`.
    """

    RENAMED = {
        "hidden_size": "slow_dim",
        "num_attention_heads": "slow_heads",
        "intermediate_size": "slow_intermediate_size",
    }

    def __init__(self, config):
        object.__setattr__(self, "_config", config)

    def __getattr__(self, name):
        return getattr(object.__getattribute__(self, "_config"), self.RENAMED.get(name, name))

    def __setattr__(self, name, value):
        setattr(object.__getattribute__(self, "_config"), self.RENAMED.get(name, name), value)


class SlowSelfAttention(CausalSelfAttention):
    """h_y causal heads of width d_y / h_y whose queries, keys and values read [x̂, ŷ] and whose output is d_y.

    Args:
        config: an `ICLSlowFastTransformerConfig`.
        layer_idx (`int`): its cache slot.
    """

    def __init__(self, config, layer_idx: int):
        super().__init__(SlowStreamConfig(config), layer_idx)
        self.qkv_proj = nn.Linear(config.hidden_size + config.slow_dim, 3 * config.slow_dim, bias=config.use_bias)


class SlowMLP(MLP):
    """y's MLP: W_2^y σ(W_1^y [x̂, ŷ]) with W_1^y ∈ ℝ^{i_y × (d_x + d_y)}, W_2^y ∈ ℝ^{d_y × i_y} (P3 App. C).

    Args:
        config: an `ICLSlowFastTransformerConfig`.
    """

    def __init__(self, config):
        super().__init__(SlowStreamConfig(config))
        self.fc_in = nn.Linear(
            config.hidden_size + config.slow_dim, config.slow_intermediate_size, bias=config.use_bias
        )


def _modulation(config) -> LowRankModulation:
    return LowRankModulation(
        config.hidden_size,
        config.slow_dim,
        config.modulation_rank,
        config.num_generators,
        config.generator_activation,
        config.generator_init_std,
    )


class SlowFastBlock(DecoderBlock):
    """Block ν of the slow/fast Transformer: the fast block on x plus the slow stream (ν < ℓ) or T(·; y^ℓ) (ν ≥ ℓ).

    `forward(x, ..., slow_features=y^ℓ)` is the fast path (x alone; modulated when ν ≥ ℓ), which is all a block
    ν < ℓ needs when y is not wanted; `forward(x, ..., slow_stream=y)` runs both streams of a block ν < ℓ and
    returns `(x, y)` (`forward_streams`). Both go through the module call, so forward hooks (and nnsight) see every
    block application.

    Args:
        config: an `ICLSlowFastTransformerConfig` (its `hidden_size` is d_x).
        layer_idx (`int`): ν.
    """

    def __init__(self, config, layer_idx: int):
        super().__init__(config, layer_idx)
        self.modulated = layer_idx >= config.slow_layer
        if self.modulated:
            self.mixer_modulation = _modulation(config)
            self.ffn_modulation = _modulation(config)
        else:
            slow = SlowStreamConfig(config)
            self.slow_mixer_norm = build_norm(slow)
            self.slow_mixer = SlowSelfAttention(config, config.num_hidden_layers + layer_idx)
            self.slow_ffn_norm = build_norm(slow)
            self.slow_ffn = SlowMLP(config)

    def _fast_input(self, norm, modulation_name, hidden_states, slow_features):
        normed = norm(hidden_states)
        return getattr(self, modulation_name)(normed, slow_features) if self.modulated else normed

    def forward(
        self,
        hidden_states,
        attention_mask=None,
        cache=None,
        input_ids=None,
        position_ids=None,
        slow_features=None,
        slow_stream=None,
        **context,
    ):
        """x^{ν+1} from x^ν (B, T, d_x); `slow_features` is y^ℓ, (B, T|1, d_y), used by blocks ν ≥ ℓ. With
        `slow_stream` = y^ν (B, T, d_y), a block ν < ℓ returns (x^{ν+1}, y^{ν+1}) (see `forward_streams`)."""
        if slow_stream is not None:
            positions = (attention_mask, cache, input_ids, position_ids)
            return self.forward_streams(hidden_states, slow_stream, *positions, **context)
        inputs = self._fast_input(self.mixer_norm, "mixer_modulation", hidden_states, slow_features)
        mixed = self.mixer(
            inputs,
            attention_mask=attention_mask,
            cache=cache,
            input_ids=input_ids,
            position_ids=position_ids,
            **context,
        )
        hidden_states = hidden_states + self.dropout(mixed)
        inputs = self._fast_input(self.ffn_norm, "ffn_modulation", hidden_states, slow_features)
        return hidden_states + self.dropout(self.ffn(inputs, **context))  # (B, T, d_x)

    def forward_streams(
        self, x, y, attention_mask=None, cache=None, input_ids=None, position_ids=None, **context
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Both streams of a block ν < ℓ: (x^{ν+1}, y^{ν+1}) from x^ν (B, T, d_x) and y^ν (B, T, d_y).

        The x computation is `forward`'s, operation for operation, so x never depends on y.
        """
        positions = dict(attention_mask=attention_mask, cache=cache, input_ids=input_ids, position_ids=position_ids)
        x_normed = self.mixer_norm(x)
        slow_mixed = self.slow_mixer(
            torch.cat([x_normed, self.slow_mixer_norm(y)], dim=-1), **positions, **{**context, "recorder": None}
        )  # (B, T, d_y); its maps stay out of the recorder, whose slot holds the x heads'
        x = x + self.dropout(self.mixer(x_normed, **positions, **context))
        y = y + self.dropout(slow_mixed)
        x_normed = self.ffn_norm(x)
        y = y + self.dropout(self.slow_ffn(torch.cat([x_normed, self.slow_ffn_norm(y)], dim=-1)))
        x = x + self.dropout(self.ffn(x_normed, **context))
        return x, y
