"""A plug-in's modeling code: a token mixer with a recurrent step, and an architecture built on it.

An exponential moving average per channel, s_t = a ⊙ s_{t−1} + (1 − a) ⊙ W_in x_t, y_t = W_out s_t, with a learned
decay a = σ(θ) ∈ (0, 1)^d. Parallel form: s_t = a^{t+1} ⊙ s_{−1} + Σ_{j≤t} (1 − a) a^{t−j} ⊙ u_j. Everything it
needs from hf_icl comes through `from hf_icl.<module> import <name>`, which the export rewrites to flat relative
imports, so a saved checkpoint loads where neither hf_icl nor this plug-in is installed.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from hf_icl.mixers.ops.padding import token_mask, zero_padding
from hf_icl.mixers.ops.residual import residual_projection
from hf_icl.mixers.registry import ConfigField, register_mixer
from hf_icl.modeling.configuration import ICLConfig, size_presets
from hf_icl.modeling.decoder import ICLForCausalLM, ICLModel
from hf_icl.modeling.regression import ICLForRegression


def finite_number(field: str, value) -> None:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        raise ValueError(f"{field}={value!r} is not allowed: expected a finite number")


DECAY_LOGIT = ConfigField("toy_decay_logit", 2.0, "initial logit θ of the EMA decay a = σ(θ)", float, finite_number)


@register_mixer("toy_ema", config_fields=(DECAY_LOGIT,))
class ToyEMAMixer(nn.Module):
    """Per-channel exponential moving average of a projected input.

    Args:
        config: an `ICLConfig` (uses hidden_size and `toy_decay_logit`).
        layer_idx (`int`): index of the layer, for its state in the cache.
    """

    recurrent = True
    returns_attention_maps = False
    continuous_inputs = True

    def __init__(self, config, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx
        self.in_proj = nn.Linear(config.hidden_size, config.hidden_size)
        self.out_proj = residual_projection(nn.Linear(config.hidden_size, config.hidden_size))
        self.decay_logit = nn.Parameter(torch.full((config.hidden_size,), float(config.toy_decay_logit)))

    def state_size(self) -> int:
        return self.decay_logit.numel() * 4  # s, float32

    def forward(self, hidden_states, attention_mask=None, cache=None, input_ids=None, position_ids=None, **kwargs):
        mask = token_mask(attention_mask, hidden_states.shape[1])
        u = zero_padding(self.in_proj(hidden_states), mask)  # (B, T, d): left pads contribute nothing
        state = cache.layer_state(self.layer_idx) if cache is not None else None
        previous = state.get("s") if state is not None else None  # (B, d) or None
        decay = torch.sigmoid(self.decay_logit)  # (d,)
        if previous is not None and u.shape[1] == 1:  # the recurrent step: O(1) per token
            s = decay * previous + (1 - decay) * u[:, 0]
            out = s[:, None]
        else:  # the parallel form
            steps = torch.arange(u.shape[1], device=u.device)
            gap = (steps[:, None] - steps[None, :]).clamp(min=0).to(u.dtype)  # (T, T)
            weights = torch.exp(gap[..., None] * torch.log(decay)) * (steps[:, None] >= steps[None, :])[..., None]
            out = (1 - decay) * torch.einsum("tjd,bjd->btd", weights, u)  # (B, T, d)
            if previous is not None:
                out = out + torch.exp((steps[:, None] + 1).to(u.dtype) * torch.log(decay)) * previous[:, None]
            s = out[:, -1]
        if state is not None:
            state.set("s", s)
        return self.out_proj(out)


class ToyEMAConfig(ICLConfig):
    r"""The toy EMA architecture: the shared skeleton with `toy_ema` mixers and MLPs.

    Args:
        See `ICLConfig`; this class only changes defaults.
    """

    model_type = "icl_toy_ema"
    PRESETS = size_presets(heads=False)

    mixer: str = "toy_ema"
    position_embedding: str = "nope"


class ToyEMAModel(ICLModel):
    """Backbone. Args: config (`ToyEMAConfig`)."""

    config_class = ToyEMAConfig


class ToyEMAForCausalLM(ICLForCausalLM):
    """Language model. Args: config (`ToyEMAConfig`)."""

    config_class = ToyEMAConfig
    base_model_class = ToyEMAModel


class ToyEMAForRegression(ICLForRegression):
    """Continuous read-in and read-out. Args: config (`ToyEMAConfig`)."""

    config_class = ToyEMAConfig
    base_model_class = ToyEMAModel
