"""Configuration of `icl_standard_hybrid`: attention blocks alternating with Mamba blocks (paper 5, §5, Fig. 6c)."""

from __future__ import annotations

from typing import ClassVar

from ...modeling.configuration import ICLConfig, size_presets


class ICLStandardHybridConfig(ICLConfig):
    r"""Standard Hybrid (Gu & Dao, 2023; paper 5 §5): a Transformer whose MLP blocks are replaced by Mamba blocks,
    i.e. blocks attention, Mamba, attention, Mamba, ... (`ffn="none"` everywhere), with learned positions.

    Unless `mixer_types` is given, it is built from `num_hidden_layers` by that alternation. One attention + Mamba
    pair (≈ 11d² parameters) counts as one paper-5 layer, as a Transformer layer (≈ 12d²) does, so the presets are
    the Transformer presets with twice the blocks: `tiny` (d=64, L=4), `small` (d=128, L=8), `base` (d=256, L=18;
    16 would fall 11 % short of the Transformer base). Defaults are the `small` preset.

    Args:
        See `ICLConfig`; this class only changes defaults and the default per-layer list.
    """

    model_type = "icl_standard_hybrid"
    PRESETS: ClassVar[dict[str, dict]] = size_presets(num_hidden_layers=(4, 8, 18))

    ffn: str = "none"
    num_hidden_layers: int = 8
    position_embedding: str = "learned"

    def __post_init__(self, **kwargs):
        if self.mixer_types is None:
            self.mixer_types = [("attention", "mamba")[i % 2] for i in range(self.num_hidden_layers)]
        super().__post_init__(**kwargs)
