"""Configuration of `icl_based`: Based on the shared skeleton."""

from __future__ import annotations

from typing import ClassVar

from ...modeling.configuration import ICLConfig, size_presets


class ICLBasedConfig(ICLConfig):
    r"""Based (Arora et al., 2024): a hybrid of Taylor linear attention (`based`) and short sliding-window softmax
    attention (`sliding_window_attention`, window `attention_window` = 64), alternating layer by layer (even layers
    linear, odd layers windowed), with Llama-style blocks (RMSNorm, SwiGLU, no biases) and RoPE inside the window
    attention. Both mixers keep a fixed-size state, so the whole stack decodes in O(1) per token. The per-layer list
    is data (`mixer_types`), DESIGN's "hybrids are configuration"; without one, the alternation is filled in for
    `num_hidden_layers`. Presets match the Transformer presets: `tiny` (d=64, L=2), `small` (d=128, L=4),
    `base` (d=256, L=8). Defaults are the `small` preset.

    Args:
        See `ICLConfig`; this class only changes defaults.
    """

    model_type = "icl_based"
    PRESETS: ClassVar[dict[str, dict]] = size_presets(intermediate_size=(184, 376, 752))

    mixer: str = "based"
    position_embedding: str = "rope"
    ffn: str = "glu"
    hidden_act: str = "silu"
    norm: str = "rmsnorm"
    use_bias: bool = False
    intermediate_size: int | None = 376

    def __post_init__(self, **kwargs):
        if self.mixer_types is None:  # alternate: Taylor linear attention, then sliding-window attention
            self.mixer_types = ["based", "sliding_window_attention"] * (self.num_hidden_layers // 2)
            self.mixer_types += ["based"] * (self.num_hidden_layers % 2)
        super().__post_init__(**kwargs)
