"""Configuration of `icl_mambaformer`: an initial Mamba block, then attention and Mamba (paper 5, §5, Fig. 6d)."""

from __future__ import annotations

from typing import ClassVar

from ...modeling.configuration import SIZES, ICLConfig, size_presets


class ICLMambaFormerConfig(ICLConfig):
    r"""MambaFormer (paper 5 §5): an initial Mamba block in place of the position embedding, then blocks attention,
    Mamba, attention, Mamba, ... with no MLP (`ffn="none"`) and no position embedding.

    Unless `mixer_types` / `ffn_types` are given, they are built from `num_hidden_layers` and `ffn`: block 0 is Mamba
    without FFN; with `ffn="none"` the rest alternate attention / Mamba (MambaFormer, as the reference `MixerModel`
    with `mixed_attn="mambaformer"`), with an FFN the rest are Transformer layers (attention + `ffn`): paper 5's
    "TF with initial Mamba" ablation (Fig. 7), preset `tf_initial_mamba` (d=128, Mamba + 3 Transformer layers).

    Presets keep the Transformer presets' widths and match their non-embedding parameter counts: `tiny` (d=64, L=4:
    Mamba, attention, Mamba, attention), `small` (d=128, L=8) and `base` (d=256, L=17: the initial block plus 8
    attention/Mamba pairs, as paper 5 builds it). `tiny` and `small` end on an attention block, as the reference
    `MixerModel` does for an odd `n_layer`. Defaults are the `small` preset.

    Args:
        See `ICLConfig`; this class only changes defaults and the default per-layer lists.
    """

    model_type = "icl_mambaformer"
    PRESETS: ClassVar[dict[str, dict]] = {
        **size_presets(num_hidden_layers=(4, 8, 17)),
        "tf_initial_mamba": dict(SIZES["small"], ffn="mlp"),
    }

    ffn: str = "none"
    num_hidden_layers: int = 8
    position_embedding: str = "nope"

    def __post_init__(self, **kwargs):
        rest = range(1, self.num_hidden_layers)
        if self.mixer_types is None:
            after = ("mamba", "attention") if self.ffn == "none" else ("attention", "attention")
            self.mixer_types = ["mamba"] + [after[i % 2] for i in rest]
        if self.ffn_types is None:
            self.ffn_types = ["none"] + [self.ffn for _ in rest]
        super().__post_init__(**kwargs)
