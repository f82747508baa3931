"""Declare a linear layer as the output projection of a residual branch (GPT-2's scaled initialisation).

The skeleton's init (`ICLPreTrainedModel._init_weights`) draws the weights of every layer so marked inside a
`DecoderBlock` from N(0, σ²/(2L)) instead of N(0, σ²): each block adds two branches to the residual stream, so the
stream's variance stays O(1) in depth (GPT-2, Radford et al., 2019, §2.3). Marking the layer where it is built,
rather than matching parameter names, lets a new mixer opt in without the skeleton knowing its names.
"""

from __future__ import annotations

from torch import nn


def residual_projection(linear: nn.Linear) -> nn.Linear:
    """Mark `linear` as a residual-branch output projection and return it.

    Args:
        linear (`nn.Linear`): the layer whose output is added to the residual stream.

    Returns:
        The same layer, with `is_residual_projection = True`.
    """
    linear.is_residual_projection = True
    return linear
