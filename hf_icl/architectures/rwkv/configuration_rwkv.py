"""Configuration of `icl_rwkv`: RWKV-4 time mixing in the shared pre-norm block (paper 1, Appendix A.8)."""

from __future__ import annotations

from typing import ClassVar

from ...modeling.configuration import ICLConfig, size_presets


class ICLRWKVConfig(ICLConfig):
    r"""RWKV-4: token shift + WKV (per-channel decay and bonus) + sigmoid receptance as the mixer, then the MLP.

    As in paper 1's reference code, the skeleton's MLP stands in for RWKV's channel mixing. No position embedding:
    order enters through the decay. `scan_chunk_size` is the chunk length of the stable chunked WKV (16: the
    intra-chunk logits cost T·C·d memory). Presets keep the Transformer presets' width and depth (the mixer has
    4d² + 5d parameters, the same as attention up to biases): `tiny` (d=64, L=2), `small` (d=128, L=4),
    `base` (d=256, L=8). Defaults are the `small` preset.

    Args:
        See `ICLConfig`; this class only changes defaults.
    """

    model_type = "icl_rwkv"
    PRESETS: ClassVar[dict[str, dict]] = size_presets(heads=False)

    mixer: str = "rwkv"
    position_embedding: str = "nope"
    scan_chunk_size: int = 16
