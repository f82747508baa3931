"""Configuration of `icl_h3`: the H3 layer in the shared pre-norm block (paper 1, Appendix A.10)."""

from __future__ import annotations

from typing import ClassVar

from ...modeling.configuration import ICLConfig, size_presets


class ICLH3Config(ICLConfig):
    r"""H3: shift-SSM on the keys (a `conv_kernel`-tap causal convolution) and a diagonal SSM (S4D-Lin, state size
    N = `ssm_state_size`) over each head's key–value outer product, read out by the queries; then the MLP.

    Head dimension d_h = `hidden_size / num_attention_heads` is 8 in every preset, so the recurrent state is
    d · d_h · N complex numbers per layer. Paper 1's reference code ran the H3 repository's default `head_dim=1`
    (`num_attention_heads = hidden_size`, where the outer product reduces to k ⊙ v) with a 64-tap shift SSM;
    both are overrides here. No position embedding. Presets keep the Transformer presets' width and depth (the H3
    layer has 4d² + 4d + K·d + (2N + 2)·H parameters): `tiny` (d=64, L=2), `small` (d=128, L=4),
    `base` (d=256, L=8). Defaults are the `small` preset.

    Args:
        See `ICLConfig`; this class only changes defaults.
    """

    model_type = "icl_h3"
    PRESETS: ClassVar[dict[str, dict]] = size_presets(num_attention_heads=(8, 16, 32))

    mixer: str = "h3"
    num_attention_heads: int = 16
    ssm_state_size: int = 64
    conv_kernel: int = 4
    position_embedding: str = "nope"
    hidden_act: str = "gelu"
