"""The point where a mixer hands its values to a block feature before mixing them (e.g. RWKV-7's value residual).

A mixer that declares `value_transform_point = True` passes its values v (B, T, d) and the input they were projected
from, x_v (B, T, d), through :func:`transform_values` before its recurrence, with the block context of the call; a
block feature may have set `mixer.value_transform` (`BlockFeature.extend_layer`), a module called as
`value_transform(values, inputs, context)` that returns the values to mix. Without one, the values pass unchanged.
The mixer's exact map (`mixing_map`) is then the map of the values it mixed.
"""

from __future__ import annotations

import torch


def transform_values(mixer, values: torch.Tensor, inputs: torch.Tensor, context: dict | None) -> torch.Tensor:
    """`mixer.value_transform(values, inputs, context)` where a block feature has set one; else `values`."""
    transform = getattr(mixer, "value_transform", None)
    return values if transform is None else transform(values, inputs, context or {})
