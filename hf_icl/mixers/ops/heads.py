"""The fused multi-head projections shared by softmax, sliding-dilated and linear attention (GPT-2 layout)."""

from __future__ import annotations

import torch
from torch import nn

from .residual import residual_projection


class FusedQKVMixer(nn.Module):
    """Base of mixers with a fused `qkv_proj` (d → 3d) and an `out_proj` (d → d), split into heads of d/H.

    Args:
        config: an `ICLConfig` (uses hidden_size, num_attention_heads, use_bias).
        layer_idx (`int`): index of the layer, used to find this layer's state in the cache.
    """

    def __init__(self, config, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.qkv_proj = nn.Linear(config.hidden_size, 3 * config.hidden_size, bias=config.use_bias)
        self.out_proj = residual_projection(nn.Linear(config.hidden_size, config.hidden_size, bias=config.use_bias))

    def split_heads(self, hidden_states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Query, key and value, each (B, H, T, D), from hidden states (B, T, d).

        Each is a transposed view of the projection (B, T, 3, H, D), taken with `unbind`: its backward stacks the
        three gradients straight into the projection's layout in one copy (a permuted view would copy twice).
        """
        batch, length, _ = hidden_states.shape
        qkv = self.qkv_proj(hidden_states).view(batch, length, 3, self.num_heads, self.head_dim)
        query, key, value = (part.transpose(1, 2) for part in qkv.unbind(2))  # each (B, H, T, D)
        return query, key, value

    def merge_heads(self, out: torch.Tensor) -> torch.Tensor:
        """The output projection of per-head outputs (B, T, H, D) → (B, T, d)."""
        return self.out_proj(out.reshape(*out.shape[:2], -1))
