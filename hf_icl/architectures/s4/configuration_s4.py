"""Configuration of `icl_s4`: the S4D layer in the shared pre-norm block (paper 1, Appendix A.9)."""

from __future__ import annotations

from typing import ClassVar

from ...modeling.configuration import ICLConfig, size_presets


class ICLS4Config(ICLConfig):
    r"""S4D: per-channel diagonal SSM (S4D-Lin, state size N = `ssm_state_size`) → GELU → output projection, then the
    MLP, as in paper 1's reference code (safari `S4D` layer with `d_state=64`, inside a block with a 4d GELU MLP).

    No position embedding: order enters through the convolution. Presets keep the Transformer presets' width and
    adjust depth to match their non-embedding parameter counts (the S4D layer has d² + (2N + 3)·d parameters
    against attention's 4d² + 4d): `tiny` (d=64, L=2), `small` (d=128, L=5), `base` (d=256, L=10).
    Defaults are the `small` preset.

    Args:
        See `ICLConfig`; this class only changes defaults.
    """

    model_type = "icl_s4"
    PRESETS: ClassVar[dict[str, dict]] = size_presets(heads=False, num_hidden_layers=(2, 5, 10))

    mixer: str = "s4"
    num_hidden_layers: int = 5
    ssm_state_size: int = 64
    position_embedding: str = "nope"
    hidden_act: str = "gelu"
