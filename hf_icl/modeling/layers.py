"""Building blocks of the shared skeleton: norms, feed-forward nets and the pre-norm `DecoderBlock`.

Block features subclass these (`hf_icl.block_features`), so this module imports none of their registry."""

from __future__ import annotations

from torch import nn

from ..mixers.ops.residual import residual_projection
from ..mixers.registry import MIXERS
from .activations import build_activation
from .rms_norm import RMSNorm


def build_norm(config) -> nn.Module:
    """LayerNorm (GPT-2 style) or RMSNorm (Llama style), as `config.norm` says."""
    if config.norm == "rmsnorm":
        return RMSNorm(config.hidden_size, eps=config.layer_norm_epsilon)
    return nn.LayerNorm(config.hidden_size, eps=config.layer_norm_epsilon)


class MLP(nn.Module):
    """Position-wise feed-forward net: `W_out act(W_in x)`.

    Args:
        config: uses hidden_size, intermediate_size, hidden_act, use_bias.
    """

    def __init__(self, config):
        super().__init__()
        self.fc_in = nn.Linear(config.hidden_size, config.intermediate_size, bias=config.use_bias)
        self.act = build_activation(config.hidden_act)
        self.fc_out = residual_projection(nn.Linear(config.intermediate_size, config.hidden_size, bias=config.use_bias))

    def forward(self, x, **context):
        return self.fc_out(self.act(self.fc_in(x)))  # (B, T, d); the block context is not used


class GLU(nn.Module):
    """Gated feed-forward net (SwiGLU with `hidden_act="silu"`): `W_down (act(W_gate x) ⊙ W_up x)`.

    Args:
        config: uses hidden_size, intermediate_size, hidden_act, use_bias.
    """

    def __init__(self, config):
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=config.use_bias)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=config.use_bias)
        self.act = build_activation(config.hidden_act)
        self.down_proj = residual_projection(
            nn.Linear(config.intermediate_size, config.hidden_size, bias=config.use_bias)
        )

    def forward(self, x, **context):
        return self.down_proj(self.act(self.gate_proj(x)) * self.up_proj(x))  # (B, T, d); context not used


FFNS = {"mlp": MLP, "glu": GLU}


class DecoderBlock(nn.Module):
    """Pre-norm block: `h = h + mixer(norm(h))`, then `h = h + ffn(norm(h))` unless the layer's FFN is `none`.

    `forward(hidden_states, attention_mask, cache, input_ids, position_ids, **context)` passes the same keyword
    `context` to the mixer and to the FFN: the per-call `recorder` (attention maps, auxiliary losses, see
    `outputs.ForwardRecorder`), schedule keywords such as RegularGPT's `dilation`, and whatever the caller gave as
    `block_context`. Each ignores the keywords it does not use, so a subclass can condition either on a second stream.

    Args:
        config: an `ICLConfig`.
        layer_idx (`int`): position in the stack; selects `config.mixer_types[layer_idx]` and
            `config.ffn_types[layer_idx]`.
    """

    def __init__(self, config, layer_idx: int):
        super().__init__()
        ffn = config.ffn_types[layer_idx]
        self.mixer_norm = build_norm(config)
        self.mixer = MIXERS[config.mixer_types[layer_idx]](config, layer_idx)
        self.ffn_norm = build_norm(config) if ffn != "none" else None
        self.ffn = FFNS[ffn](config) if ffn != "none" else None
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, hidden_states, attention_mask=None, cache=None, input_ids=None, position_ids=None, **context):
        mixed = self.mixer(
            self.mixer_norm(hidden_states),
            attention_mask=attention_mask,
            cache=cache,
            input_ids=input_ids,
            position_ids=position_ids,
            **context,
        )
        hidden_states = hidden_states + self.dropout(mixed)
        if self.ffn is not None:
            hidden_states = hidden_states + self.dropout(self.ffn(self.ffn_norm(hidden_states), **context))
        return hidden_states  # (B, T, d)
