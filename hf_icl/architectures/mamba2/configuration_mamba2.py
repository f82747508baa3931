"""Configuration of `icl_mamba2`: Mamba-2 on the shared skeleton."""

from __future__ import annotations

from typing import ClassVar

from ...modeling.configuration import ICLConfig, size_presets


class ICLMamba2Config(ICLConfig):
    r"""Mamba-2 (Dao & Gu, 2024): every block is norm → Mamba-2 (SSD) mixer → residual, GAU-style with no FFN, as
    `mamba_ssm`'s Mamba2 LM (RMSNorm, no position embedding: order enters through the convolution and the scan).
    d_inner = 2d in heads of `mamba2_head_dim` = 32, state N = `ssm_state_size` = 64 per head. A block holds
    ≈ 6d² + 2Nd, so the presets keep the Transformer presets' widths with more blocks: `tiny` (d=64, L=3),
    `small` (d=128, L=7), `base` (d=256, L=14). Defaults are the `small` preset.

    Args:
        See `ICLConfig`; this class only changes defaults.
    """

    model_type = "icl_mamba2"
    PRESETS: ClassVar[dict[str, dict]] = size_presets(heads=False, num_hidden_layers=(3, 7, 14), ssm_state_size=64)

    mixer: str = "mamba2"
    ffn: str = "none"
    norm: str = "rmsnorm"
    num_hidden_layers: int = 7
    position_embedding: str = "nope"
    use_bias: bool = False
