"""Configuration of `icl_s4_mamba`: Mamba blocks whose selective SSM is replaced by S4D (paper 5, §3.1)."""

from __future__ import annotations

from typing import ClassVar

from ...modeling.configuration import ICLConfig, size_presets


class ICLS4MambaConfig(ICLConfig):
    r"""S4-Mamba: the `mamba` architecture with the input-dependent S6 replaced by the input-independent diagonal
    S4D SSM (state N = `ssm_state_size`); the convolution and the SiLU gate stay. No FFN, no position embedding.

    An S4-Mamba block has 3·expand·d² + (2N + conv_kernel + 3)·expand·d parameters. Presets keep the Transformer
    presets' widths with N = 32: `tiny` (d=64, L=3), `small` (d=128, L=7), `base` (d=256, L=15). Defaults are `small`.

    Args:
        See `ICLConfig`; this class only changes defaults.
    """

    model_type = "icl_s4_mamba"
    PRESETS: ClassVar[dict[str, dict]] = size_presets(heads=False, num_hidden_layers=(3, 7, 15), ssm_state_size=32)

    mixer: str = "s4_mamba"
    ffn: str = "none"
    num_hidden_layers: int = 7
    ssm_state_size: int = 32
    position_embedding: str = "nope"
