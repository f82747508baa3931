"""Configuration of `icl_rwkv7`: RWKV-7 on the shared skeleton."""

from __future__ import annotations

from typing import ClassVar

from ...modeling.configuration import ICLConfig, size_presets


class ICLRWKV7Config(ICLConfig):
    r"""RWKV-7 "Goose" (Peng et al., 2025): RWKV-7 time mixing in the shared pre-norm block, the skeleton's MLP in
    place of channel mixing (as the `rwkv` architecture and paper 1's reference code). No position embedding: order
    enters through token shift and decay. The mixer holds 4d² plus three rank-32 LoRAs, so the MLP is narrower
    than 4d to match the Transformer presets: `tiny` (d=64, L=2), `small` (d=128, L=4), `base` (d=256, L=8).
    Defaults are the `small` preset.

    Args:
        See `ICLConfig`; this class only changes defaults.
    """

    model_type = "icl_rwkv7"
    PRESETS: ClassVar[dict[str, dict]] = size_presets(intermediate_size=(160, 432, 960))

    mixer: str = "rwkv7"
    position_embedding: str = "nope"
    intermediate_size: int | None = 432
