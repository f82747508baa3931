"""Configuration of `icl_transformer`: a GPT-2 style decoder (paper 1, Appendix A.3)."""

from __future__ import annotations

from typing import ClassVar

from ...modeling.configuration import ICLConfig, size_presets


class ICLTransformerConfig(ICLConfig):
    r"""GPT-2 style Transformer: learned positions, LayerNorm, softmax attention, GELU MLP, tied embeddings.

    Defaults are the `small` preset. Presets: `tiny` (d=64, L=2), `small` (d=128, L=4), `base` (d=256, L=8);
    paper 1's best RegBench Transformer at N=2500 is `base`-depth at d=128 (`paper_n2500`).

    Args:
        See `ICLConfig`; this class only changes defaults.
    """

    model_type = "icl_transformer"
    PRESETS: ClassVar[dict[str, dict]] = {
        **size_presets(),
        "paper_n2500": dict(hidden_size=128, num_hidden_layers=8, num_attention_heads=1),
    }

    mixer: str = "attention"
    position_embedding: str = "learned"
    ffn: str = "mlp"
    norm: str = "layernorm"
    hidden_act: str = "gelu_pytorch_tanh"
