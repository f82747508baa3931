"""Configuration of `icl_lstm`: stacked LSTM layers without feed-forward nets (paper 1, Appendix A.7)."""

from __future__ import annotations

from typing import ClassVar

from ...modeling.configuration import ICLConfig, size_presets


class ICLLSTMConfig(ICLConfig):
    r"""Multi-layer LSTM: one `nn.LSTM` of width d per layer, no FFN, no position embedding (order is recurrent).

    Each layer is the skeleton's pre-norm residual block around the LSTM (see `hf_icl/mixers/lstm.py`). An LSTM layer
    has ≈ 8d² parameters against a Transformer layer's ≈ 12d², so at the same width the presets use 1.5× the layers:
    `tiny` (d=64, L=3), `small` (d=128, L=6), `base` (d=256, L=12). Defaults are the `small` preset.

    Args:
        See `ICLConfig`; this class only changes defaults.
    """

    model_type = "icl_lstm"
    PRESETS: ClassVar[dict[str, dict]] = size_presets(heads=False, num_hidden_layers=(3, 6, 12))

    mixer: str = "lstm"
    ffn: str = "none"
    position_embedding: str = "nope"
    num_hidden_layers: int = 6
