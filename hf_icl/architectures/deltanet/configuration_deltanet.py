"""Configuration of `icl_deltanet`: DeltaNet on the shared skeleton."""

from __future__ import annotations

from typing import ClassVar

from ...modeling.configuration import ICLConfig, size_presets


class ICLDeltaNetConfig(ICLConfig):
    r"""DeltaNet (Yang et al., 2024): the delta-rule mixer with Llama-style blocks (RMSNorm, SwiGLU, no biases), as
    flash-linear-attention's DeltaNet models. No position embedding: the short convolutions and the state carry order.
    The mixer holds ≈ 4d² like attention and the SwiGLU ≈ 8d², so the presets match the Transformer presets:
    `tiny` (d=64, L=2), `small` (d=128, L=4), `base` (d=256, L=8). Defaults are the `small` preset.

    Args:
        See `ICLConfig`; this class only changes defaults.
    """

    model_type = "icl_deltanet"
    PRESETS: ClassVar[dict[str, dict]] = size_presets(intermediate_size=(176, 344, 688))

    mixer: str = "deltanet"
    position_embedding: str = "nope"
    ffn: str = "glu"
    hidden_act: str = "silu"
    norm: str = "rmsnorm"
    use_bias: bool = False
    intermediate_size: int | None = 344
