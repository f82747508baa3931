"""Configuration of `icl_gla`: gated linear attention with a data-dependent decay (paper 1, Appendix A.6)."""

from __future__ import annotations

from typing import ClassVar

from ...modeling.configuration import ICLConfig, size_presets


class ICLGLAConfig(ICLConfig):
    r"""GLA Transformer (Yang et al., 2023): GLA mixer with Llama-style blocks (RMSNorm, SwiGLU, no biases).

    No position embedding: the data-dependent decay carries order. The mixer holds ≈ 4d² (keys d/2 wide), the
    SwiGLU ≈ 8d² (width ≈ 8d/3, rounded to a multiple of 8), so the presets match the Transformer presets' counts.
    Defaults are the `small` preset; presets `tiny` (d=64, L=2), `small` (d=128, L=4), `base` (d=256, L=8).

    Args:
        See `ICLConfig`; this class only changes defaults.
    """

    model_type = "icl_gla"
    PRESETS: ClassVar[dict[str, dict]] = size_presets(intermediate_size=(176, 344, 688))

    mixer: str = "gla"
    position_embedding: str = "nope"
    ffn: str = "glu"
    hidden_act: str = "silu"
    norm: str = "rmsnorm"
    use_bias: bool = False
    intermediate_size: int | None = 344
