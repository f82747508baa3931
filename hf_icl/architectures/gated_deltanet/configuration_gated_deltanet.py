"""Configuration of `icl_gated_deltanet`: Gated DeltaNet on the shared skeleton."""

from __future__ import annotations

from typing import ClassVar

from ...modeling.configuration import ICLConfig, size_presets


class ICLGatedDeltaNetConfig(ICLConfig):
    r"""Gated DeltaNet (Yang, Kautz & Hatamizadeh, 2025): the gated delta-rule mixer with Llama-style blocks (RMSNorm,
    SwiGLU, no biases), as flash-linear-attention's GatedDeltaNet models; no position embedding. The mixer holds
    ≈ 5d² (q, k, v, the output gate and W_o), so the SwiGLU is narrower (≈ 7d²) to match the Transformer presets:
    `tiny` (d=64, L=2), `small` (d=128, L=4), `base` (d=256, L=8). Defaults are the `small` preset.

    Args:
        See `ICLConfig`; this class only changes defaults.
    """

    model_type = "icl_gated_deltanet"
    PRESETS: ClassVar[dict[str, dict]] = size_presets(intermediate_size=(152, 304, 600))

    mixer: str = "gated_deltanet"
    position_embedding: str = "nope"
    ffn: str = "glu"
    hidden_act: str = "silu"
    norm: str = "rmsnorm"
    use_bias: bool = False
    intermediate_size: int | None = 304
