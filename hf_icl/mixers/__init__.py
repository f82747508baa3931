"""Token mixers, one file each. `MIXERS` maps the names used in `config.mixer_types` to classes.

Interface: `Mixer(config, layer_idx)` with
`forward(hidden_states, attention_mask=None, cache=None, input_ids=None, position_ids=None) -> hidden_states`
and `state_size() -> int | None` (bytes of recurrent state per sequence; `None` for attention).
"""

from .attention import CausalSelfAttention
from .dilated_attention import SlidingDilatedAttention
from .gla import GatedLinearAttention
from .h3 import H3Mixer
from .hyena import HyenaMixer
from .linear_attention import LinearAttention
from .lstm import LSTMMixer
from .mamba import MambaMixer, S4MambaMixer
from .retnet import MultiScaleRetention
from .rwkv import RWKVTimeMix
from .s4 import S4DMixer

MIXERS = {
    "attention": CausalSelfAttention,
    "dilated_attention": SlidingDilatedAttention,
    "linear_attention": LinearAttention,
    "retention": MultiScaleRetention,
    "gla": GatedLinearAttention,
    "lstm": LSTMMixer,
    "rwkv": RWKVTimeMix,
    "s4": S4DMixer,
    "h3": H3Mixer,
    "hyena": HyenaMixer,
    "mamba": MambaMixer,
    "s4_mamba": S4MambaMixer,
}

__all__ = [
    "MIXERS",
    "CausalSelfAttention",
    "GatedLinearAttention",
    "H3Mixer",
    "HyenaMixer",
    "LinearAttention",
    "LSTMMixer",
    "MambaMixer",
    "MultiScaleRetention",
    "RWKVTimeMix",
    "S4DMixer",
    "S4MambaMixer",
    "SlidingDilatedAttention",
]
