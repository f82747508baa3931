"""Configuration of `icl_llama`: the "Transformer (Llama)" of paper 1's language-modelling experiments (§6, A.2)."""

from __future__ import annotations

from typing import ClassVar

from ...modeling.configuration import ICLConfig, size_presets


class ICLLlamaConfig(ICLConfig):
    r"""Llama-style Transformer: softmax attention with RoPE, SwiGLU feed-forward net, RMSNorm, no biases.

    Defaults are the `small` preset. Presets `tiny`/`small`/`base` keep the Transformer presets' width, depth and
    heads; the SwiGLU width (≈ 8d/3, rounded to a multiple of 8) makes the non-embedding parameter count match them.

    Args:
        See `ICLConfig`; this class only changes defaults.
    """

    model_type = "icl_llama"
    PRESETS: ClassVar[dict[str, dict]] = size_presets(intermediate_size=(176, 344, 688))

    mixer: str = "attention"
    position_embedding: str = "rope"
    ffn: str = "glu"
    hidden_act: str = "silu"
    norm: str = "rmsnorm"
    use_bias: bool = False
    intermediate_size: int | None = 344
