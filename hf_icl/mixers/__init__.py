"""Token mixers, one file each. `MIXERS` maps the names used in `config.mixer_types` to classes.

Interface: `Mixer(config, layer_idx)` with
`forward(hidden_states, attention_mask=None, cache=None, input_ids=None, position_ids=None, **context)
-> hidden_states` and `state_size() -> int | None` (bytes of recurrent state per sequence; `None` for attention).
Each mixer class declares two capabilities, which the architecture registry (`hf_icl.models.Architecture`) reads:
`recurrent` (cached decoding keeps a fixed-size state, O(1) per token; exactly when `state_size()` is not `None`)
and `returns_attention_maps` (softmax attention, whose maps the analysis tools can read). A residual-branch output
projection is built as `ops.residual.residual_projection(nn.Linear(...))` to get GPT-2's scaled init.

`context` is the block's keyword context, given to the mixer and the FFN of a block alike (`block_context=` on the
model's forward): a mixer reads what it needs and ignores the rest. The skeleton always adds `recorder`, a
`modeling.outputs.ForwardRecorder`: softmax-attention mixers report probabilities with `recorder.add_attention`
when `recorder.output_attentions` is set, and any mixer may report a named auxiliary loss with
`recorder.add_aux_loss(name, value)`.

Mixer state: with a cache, `cache.layer_state(layer_idx)` is the layer's `MixerState` (named batch-first tensors,
see `modeling/cache.py`); a mixer reads its previous state there and writes the new one back. Class attributes
declare capabilities the registry reads: `recurrent` (O(1) state per token) and `returns_attention_maps`.

Initialisation: the skeleton's `_init_weights` applies the normal init to every `nn.Linear`/`nn.Embedding`, scales
the layers marked `ops.residual.residual_projection` by 1/√(2L), and then calls `reset_mixer_parameters()` on any
module that defines it (SSM spectra, filters, decays); such a reset must go through `transformers.initialization`
so tensors loaded by `from_pretrained` are left untouched.
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
