"""RWKV-7's value residual (Peng et al., 2025, §4; ResFormer's value residual learning): a block feature.

Every layer after the first mixes the first layer's values into its own before its recurrence:

    v_first = v^(0);   v^(l) ← lerp(v^(l), v_first, σ(ν + W_2 W_1 x^v)) = v^(l) + (v_first − v^(l)) ⊙ σ(·),  l ≥ 1

with a per-channel bias ν and a rank-r LoRA of the token-shifted input x^v the values were projected from, as
flash-linear-attention's `RWKV7Attention` (`v_lora`, bias initialised to 0.73 − 0.4·(n/(d−1) − 0.5)). It works on
every mixer that declares `value_transform_point` (`mixers/ops/value_transform.py`; RWKV-7's time mixing), in
training, cached decoding (the first layer's values of the same tokens) and mixing maps (the map of the values
mixed). `--override value_residual=true` turns it on; run folders name it `+vres`.

The layers of one forward call share the first layer's values through the block context (`call_context`), keyed
by the values' shape: a cached continuation's chunk and, when maps are asked for, the whole history each find the
first layer's values of the same positions.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import initialization as init

from ..mixers.registry import MIXERS, ConfigField, positive_int
from .feature_registry import BlockFeature, register_block_feature

CONTEXT_KEY = "value_residual"


class ValueResidualGate(nn.Module):
    """The value transform of layer `index`: the first layer records its values, the later ones mix them in.

    Args:
        width (`int`): the values' width d.
        rank (`int`): rank r of the gate's LoRA.
        index (`int`): the layer's index (0: the first layer, which has no weights).
    """

    def __init__(self, width: int, rank: int, index: int):
        super().__init__()
        self.first = index == 0
        if not self.first:
            self.down = nn.Linear(width, rank, bias=False)  # W_1
            self.up = nn.Linear(rank, width, bias=True)  # W_2, its bias is ν

    @torch.no_grad()
    def reset_mixer_parameters(self) -> None:
        if not self.first:
            width = self.up.bias.numel()
            linear = torch.arange(width, dtype=torch.float32) / max(width - 1, 1) - 0.5
            init.copy_(self.up.bias, 0.73 - 0.4 * linear)

    def forward(self, values, inputs, context):
        """values, inputs (B, T, d) -> the values to mix (B, T, d)."""
        store = context.get(CONTEXT_KEY)
        if store is None:
            raise ValueError("value_residual: the block context has no first-layer values; call the model, not a layer")
        key = tuple(values.shape)
        if self.first:
            store[key] = values
            return values
        if key not in store:
            raise ValueError(f"value_residual: no first-layer values of shape {key} in this call")
        return torch.lerp(values, store[key].to(values.dtype), torch.sigmoid(self.up(self.down(inputs))))


@register_block_feature(
    "value_residual",
    config_fields=(
        ConfigField("value_residual", False, "RWKV-7's value residual: layers after the first mix in its values",
                    type=bool),  # fmt: skip
        ConfigField("value_residual_rank", 32, "rank of the value residual's gate LoRA", check=positive_int),
    ),
)
class ValueResidual(BlockFeature):
    """RWKV-7's value residual: every layer after the first mixes the first layer's values into its own."""

    selector = "value_residual"
    requirement = "mixers that hand over their values (`value_transform_point`)"

    @classmethod
    def accepts(cls, config_class) -> bool:
        return all(getattr(MIXERS[name], "value_transform_point", False) for name in config_class().mixer_types)

    @classmethod
    def check_config(cls, config) -> None:
        if not getattr(config, "value_residual", False):
            return
        accepting = sorted(name for name, mixer in MIXERS.items() if getattr(mixer, "value_transform_point", False))
        refused = sorted({name for name in config.mixer_types if name not in accepting})
        if refused:
            raise ValueError(
                f"value_residual=True needs mixers that hand over their values (value_transform_point), and "
                f"{', '.join(refused)} {'does' if len(refused) == 1 else 'do'} not; mixers that do: "
                f"{', '.join(accepting) or 'none'}"
            )

    @classmethod
    def extend_layer(cls, config, layer, index: int) -> None:
        mixer = getattr(layer, "mixer", None)
        if mixer is None:
            raise ValueError(f"value_residual=True: layer {index} ({type(layer).__name__}) has no `mixer` to extend")
        mixer.value_transform = ValueResidualGate(config.hidden_size, config.value_residual_rank, index)

    @classmethod
    def call_context(cls, config) -> dict:
        return {CONTEXT_KEY: {}}

    @classmethod
    def label(cls, value) -> str:
        return "+vres" if value else ""
