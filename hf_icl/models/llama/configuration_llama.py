"""Configuration of `icl_llama`: the "Transformer (Llama)" of paper 1's language-modelling experiments (§6, A.2)."""

from __future__ import annotations

from typing import ClassVar

from ...modeling.configuration import ICLConfig


class ICLLlamaConfig(ICLConfig):
    r"""Llama-style Transformer: softmax attention with RoPE, SwiGLU feed-forward net, RMSNorm, no biases.

    Defaults are the `small` preset. Presets `tiny`/`small`/`base` keep the Transformer presets' width, depth and
    heads; the SwiGLU width (≈ 8d/3, rounded to a multiple of 8) makes the non-embedding parameter count match them.

    Args:
        See `ICLConfig`; this class only changes defaults.
    """

    model_type = "icl_llama"
    PRESETS: ClassVar[dict[str, dict]] = {
        "tiny": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=176),
        "small": dict(hidden_size=128, num_hidden_layers=4, num_attention_heads=2, intermediate_size=344),
        "base": dict(hidden_size=256, num_hidden_layers=8, num_attention_heads=4, intermediate_size=688),
    }

    mixer: str = "attention"
    position_embedding: str = "rope"
    ffn: str = "glu"
    hidden_act: str = "silu"
    norm: str = "rmsnorm"
    use_bias: bool = False
    intermediate_size: int | None = 344
