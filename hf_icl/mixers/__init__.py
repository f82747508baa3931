"""Token mixers, one file each, each registering itself with `@register_mixer` (the interface, the config-field
declarations and the capabilities are described in `registry`). `MIXERS` maps the names used in
`config.mixer_types` to classes; this package imports every module of its folder, so a new mixer file is all it
takes.

A residual-branch output projection is built as `ops.residual.residual_projection(nn.Linear(...))` to get GPT-2's
scaled init. `context` is the block's keyword context, given to the mixer and the FFN of a block alike
(`block_context=` on the model's forward): a mixer reads what it needs and ignores the rest. The skeleton always
adds `recorder`, a `modeling.outputs.ForwardRecorder`: softmax-attention mixers report probabilities with
`recorder.add_attention` when `recorder.output_attentions` is set, and any mixer may report a named auxiliary loss
with `recorder.add_aux_loss(name, value)`.

Mixer state: with a cache, `cache.layer_state(layer_idx)` is the layer's `MixerState` (named batch-first tensors,
see `modeling/cache.py`); a mixer reads its previous state there and writes the new one back.

Initialisation: the skeleton's `_init_weights` applies the normal init to every `nn.Linear`/`nn.Embedding`, scales
the layers marked `ops.residual.residual_projection` by 1/√(2L), and then calls `reset_mixer_parameters()` on any
module that defines it (SSM spectra, filters, decays); such a reset must go through `transformers.initialization`
so tensors loaded by `from_pretrained` are left untouched.
"""

import importlib
import pkgutil

from .registry import (
    MIXERS,
    ConfigField,
    MixerSpec,
    all_fields,
    fields_of,
    list_mixers,
    mixer_spec,
    register_mixer,
    unregister_mixer,
)

# Every module of this folder is imported, so each mixer file registers itself: adding a mixer edits no list.
for _module in pkgutil.iter_modules(__path__):
    if not _module.ispkg and not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")

globals().update({cls.__name__: cls for cls in MIXERS.values()})  # `from hf_icl.mixers import GatedLinearAttention`

__all__ = [
    "MIXERS",
    "ConfigField",
    "MixerSpec",
    "all_fields",
    "fields_of",
    "list_mixers",
    "mixer_spec",
    "register_mixer",
    "unregister_mixer",
    *sorted(cls.__name__ for cls in MIXERS.values()),
]
