"""Recurrences in float32 under mixed precision (issue #16: bf16 autocast for the matmuls, fp32 where the recurrences
need it): the custom autograd functions of the scans run their forward and backward with autocast off."""

from __future__ import annotations

import functools

import torch


def autocast_off(fn):
    """Decorate an autograd function's `forward(ctx, ...)` or `backward(ctx, ...)` to run with autocast disabled on
    the device of its first tensor argument, so its matmuls neither drop to bf16 nor mix dtypes in place."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        device = next((arg.device.type for arg in args if isinstance(arg, torch.Tensor)), "cpu")
        with torch.autocast(device_type=device, enabled=False):
            return fn(ctx, *args)

    return wrapper
