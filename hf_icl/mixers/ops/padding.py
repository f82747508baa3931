"""Padding for recurrent and convolutional mixers.

Batches are left-padded for generation. A recurrent state (or a convolution window) must not see padding, so
mixers zero their state inputs at padded positions: the state of a left-padded row is then exactly the state of
the same row unpadded, and its outputs agree position by position.
"""

from __future__ import annotations

import torch


def token_mask(attention_mask: torch.Tensor | None, length: int) -> torch.Tensor | None:
    """The (B, T) boolean mask of real tokens among the last `length` positions, or `None` when nothing is padded.

    Args:
        attention_mask: (B, S) mask over the whole sequence so far (cached prefix included), 1 = real token.
        length: number of positions in the current forward (T ≤ S).
    """
    if attention_mask is None:
        return None
    return attention_mask[:, -length:].bool()  # (B, T)


def zero_padding(values: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """`values` (B, T, ...) with every padded position set to zero (unchanged when `mask` is `None`)."""
    if mask is None:
        return values
    return values * mask.view(*mask.shape, *([1] * (values.dim() - 2))).to(values.dtype)
