"""P3's slow/fast streams (Learning Fast and Slow, §3; DESIGN §5.7) as a block feature.

`slowfast_block.py` holds the two-stream block (the fast block on x plus the slow stream y, or the y^ℓ modulation);
`slow_features.py` the slow-feature regularisers, augmentations and the auxiliary truncated batch. A config class
turns the feature on by listing it in `block_features` (`architectures/slowfast_transformer`, whose config holds the
fields the block reads: `slow_dim`, `slow_heads`, `slow_layer`, `modulation_rank`, ...); its layers are then
`SlowFastBlock`s, which keep the slow heads' keys and values in cache slots after the L regular layers.
"""

from __future__ import annotations

from ..feature_registry import BlockFeature, register_block_feature
from .slowfast_block import SlowFastBlock


@register_block_feature("slowfast")
class SlowFastStreams(BlockFeature):
    """The slow/fast streams: every regular layer is a `SlowFastBlock` (a config class lists `"slowfast"` in its
    `block_features`; the architecture's `run_layers` schedules the two streams)."""

    block_class = SlowFastBlock


__all__ = ["SlowFastBlock", "SlowFastStreams"]
