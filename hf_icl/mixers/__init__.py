"""Token mixers, one file each. `MIXERS` maps the names used in `config.mixer_types` to classes.

Interface: `Mixer(config, layer_idx)` with
`forward(hidden_states, attention_mask=None, cache=None, input_ids=None, position_ids=None) -> hidden_states`
and `state_size() -> int | None` (bytes of recurrent state per sequence; `None` for attention).
"""

from .attention import CausalSelfAttention
from .dilated_attention import SlidingDilatedAttention

MIXERS = {
    "attention": CausalSelfAttention,
    "dilated_attention": SlidingDilatedAttention,
}

__all__ = ["MIXERS", "CausalSelfAttention", "SlidingDilatedAttention"]
