"""Configuration of `icl_mamba`: a stack of Mamba blocks (paper 1, Appendix A.12; paper 5, Fig. 6b)."""

from __future__ import annotations

from typing import ClassVar

from ...modeling.configuration import ICLConfig, size_presets


class ICLMambaConfig(ICLConfig):
    r"""Mamba: every block is norm → Mamba mixer → residual; the mixer is the GAU-style block, so there is no FFN
    (paper 1, A.2 eq. 17; `mamba_simple.Mamba` with d_inner = `expand`·d, state N = `ssm_state_size`, short conv
    `conv_kernel`, Δ rank `dt_rank`). No position embedding: order enters through the convolution and the scan.

    LayerNorm, as paper 5's reference `MixerModel` (`rms_norm=False`); the original Mamba LM uses RMSNorm
    (`norm="rmsnorm"`). A Mamba block has ≈ 7d² parameters against a Transformer layer's 12d², so the presets keep the
    Transformer presets' widths with more blocks: `tiny` (d=64, L=3), `small` (d=128, L=7), `base` (d=256, L=14).
    `mamba_hybrid_middle` is paper 5 §5.1's Mamba with one Standard-Hybrid layer in the middle: 8 blocks at d=128
    whose 4th block is attention (the middle pair becomes attention → Mamba), without position embedding; its
    per-layer list is fixed, so overriding `num_hidden_layers` with it falls back to an all-Mamba stack.
    Defaults are the `small` preset.

    Args:
        See `ICLConfig`; this class only changes defaults.
    """

    model_type = "icl_mamba"
    PRESETS: ClassVar[dict[str, dict]] = {
        **size_presets(heads=False, num_hidden_layers=(3, 7, 14)),
        "mamba_hybrid_middle": dict(
            hidden_size=128, num_hidden_layers=8, mixer_types=["mamba"] * 3 + ["attention"] + ["mamba"] * 4
        ),
    }

    mixer: str = "mamba"
    ffn: str = "none"
    num_hidden_layers: int = 7
    position_embedding: str = "nope"
