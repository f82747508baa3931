"""Configuration of `icl_retnet`: multi-scale retention with RoPE and fixed per-head decay (paper 1, Appendix A.5)."""

from __future__ import annotations

from typing import ClassVar

from ...modeling.configuration import ICLConfig, size_presets


class ICLRetNetConfig(ICLConfig):
    r"""RetNet (Sun et al., 2023): multi-scale retention, LayerNorm, GELU FFN of width 2d.

    The RetNet paper's allocation: retention holds 8d² (values and gate 2d wide) and the FFN 4d² (intermediate
    2d), 12d² per layer like the Transformer's 4d² + 8d². RoPE is applied inside retention
    (`position_embedding="rope"`), nothing is added to the embeddings. Defaults are the `small` preset; presets
    `tiny` (d=64, L=2), `small` (d=128, L=4), `base` (d=256, L=8), the Transformer presets' width and depth.

    Args:
        See `ICLConfig`; this class only changes defaults.
    """

    model_type = "icl_retnet"
    PRESETS: ClassVar[dict[str, dict]] = size_presets(intermediate_size=(128, 256, 512))

    mixer: str = "retention"
    position_embedding: str = "rope"
    ffn: str = "mlp"
    norm: str = "layernorm"
    hidden_act: str = "gelu"
    intermediate_size: int | None = 256
