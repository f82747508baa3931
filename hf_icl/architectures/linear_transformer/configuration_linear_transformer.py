"""Configuration of `icl_linear_transformer`: linear attention with the identity feature map (paper 1, Appendix A.4)."""

from __future__ import annotations

from typing import ClassVar

from ...modeling.configuration import ICLConfig, size_presets


class ICLLinearTransformerConfig(ICLConfig):
    r"""Transformer with linear attention (Katharopoulos et al., 2020) in every layer, identity feature map.

    Everything but the mixer is the GPT-2 style `transformer`: learned absolute positions (as paper 1's reference
    configuration for this model), LayerNorm, GELU MLP 4d, biases, tied embeddings. The mixer holds the same 4d²
    as softmax attention, so each preset has exactly the `transformer` preset's parameter count. Defaults are the
    `small` preset; presets `tiny` (d=64, L=2), `small` (d=128, L=4), `base` (d=256, L=8).

    Args:
        See `ICLConfig`; this class only changes defaults.
    """

    model_type = "icl_linear_transformer"
    PRESETS: ClassVar[dict[str, dict]] = size_presets()

    mixer: str = "linear_attention"
    position_embedding: str = "learned"
    ffn: str = "mlp"
    norm: str = "layernorm"
    hidden_act: str = "gelu_pytorch_tanh"
