"""Sliding-dilated attention of RegularGPT (paper 2, §3.1, eq. (1)).

At depth l with chunk size C, query m attends to the C keys n = m − j·C^l, j ∈ {0, …, C−1}:

    M^(l)_mn = r_j  if (m − n) / C^l = j ∈ [C],  −∞ otherwise,

with a learned scalar r_j per offset and per head. The implementation is sparse: keys and values are gathered at
the C offsets, so a layer costs O(T·C·d) instead of O(T²·d). Depth and weight sharing (§3.2) live in the model:
it applies the same K blocks at depths l = 0 … ⌈log_C T⌉ − 1 and passes `dilation = C^l` and the cache slot of
each application. Decoding keeps every application's keys and values, so a new token gathers its C keys per
application from the cache: O(C·d) per application, O(C·d·K·log T) per token. Only when a `recorder` in the
block context asks for attention maps are the C probabilities per query scattered into a dense (B, H, T, S) map.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import initialization as init

from .ops.heads import FusedQKVMixer
from .registry import ConfigField, int_at_least, one_of, register_mixer


def dilated_key_indices(query_len: int, key_len: int, chunk_size: int, dilation: int, device):
    """Key index of every (query, offset) pair and whether it exists: two (T, C) tensors."""
    queries = torch.arange(key_len - query_len, key_len, device=device)[:, None]  # absolute query indices
    keys = queries - torch.arange(chunk_size, device=device)[None, :] * dilation  # (T, C)
    return keys.clamp(min=0), keys >= 0


def dense_attention_map(probs: torch.Tensor, index: torch.Tensor, key_len: int) -> torch.Tensor:
    """Scatter the gathered probabilities (B, H, T, C) at key indices `index` (T, C) into a (B, H, T, S) map.

    Offsets that do not exist (before the sequence start) are clamped to key 0 with probability exactly 0, so each
    existing offset writes one entry and every other entry of a row is 0.
    """
    dense = probs.new_zeros(*probs.shape[:3], key_len)  # (B, H, T, S)
    return dense.scatter_add_(-1, index.expand(*probs.shape), probs)


CHUNK_SIZE = ConfigField(
    "dilated_attention_chunk_size", 2, "C of sliding-dilated attention (RegularGPT): C keys per query, dilation C^l",
    check=int_at_least(2), former_names=("chunk_size",),
)  # fmt: skip
MISSING_KEYS = ConfigField(
    "dilated_attention_missing_keys", "mask",
    "keys before the sequence start and padding keys: `zero` (zero key and value kept in the softmax, as P2 pads) or "
    "`mask` (left out)",
    check=one_of("zero", "mask"),
)  # fmt: skip


@register_mixer("dilated_attention", config_fields=(CHUNK_SIZE, MISSING_KEYS))
class SlidingDilatedAttention(FusedQKVMixer):
    """Multi-head sliding-dilated attention with per-head offset biases r (P2 eq. (1)).

    Args:
        config: an `ICLConfig` with `dilated_attention_chunk_size` (C) and `dilated_attention_missing_keys`; uses
            hidden_size, num_attention_heads, use_bias.
        layer_idx (`int`): index of the shared block this mixer belongs to.
    """

    reads_shared_fields = ("num_attention_heads",)  # ICLConfig.MIXER_ONLY_FIELDS it reads

    recurrent = False  # every application keeps its keys and values
    returns_attention_maps = True  # softmax over the C dilated keys
    map_axis = "heads"
    map_rows_sum_to_one = False  # early rows give part of their mass to missing keys (`dilated_attention_missing_keys`)

    def __init__(self, config, layer_idx: int):
        super().__init__(config, layer_idx)
        self.chunk_size = config.dilated_attention_chunk_size  # C
        self.zero_missing_keys = config.dilated_attention_missing_keys == "zero"
        self.offset_bias = nn.Parameter(torch.zeros(config.num_attention_heads, self.chunk_size))  # r_{h,j}

    def state_size(self) -> int | None:
        return None  # keys and values grow with the sequence, as in attention

    def multiplications(self, length: int) -> int:
        """As attention (P5 Table 7) with C keys per query instead of L."""
        width = self.num_heads * self.head_dim
        return 4 * length * width * width + 2 * length * self.chunk_size * width

    def reset_mixer_parameters(self) -> None:
        init.zeros_(self.offset_bias)  # transformers' initialiser: leaves loaded weights alone

    def forward(
        self,
        hidden_states,
        attention_mask=None,
        cache=None,
        input_ids=None,
        position_ids=None,
        dilation: int = 1,
        application: int | None = None,
        recorder=None,
        **kwargs,
    ):
        length = hidden_states.shape[1]
        query, key, value = self.split_heads(hidden_states)  # each (B, H, T, D)
        if cache is not None:
            state = cache.layer_state(self.layer_idx if application is None else application)
            if state.get("key") is not None:
                key = torch.cat([state.get("key"), key], dim=2)  # (B, H, S, D)
                value = torch.cat([state.get("value"), value], dim=2)
            state.set("key", key)
            state.set("value", value)
        index, exists = dilated_key_indices(length, key.shape[2], self.chunk_size, dilation, key.device)  # (T, C)
        present = exists[None, None]  # (1, 1, T, C)
        if attention_mask is not None:
            present = present & attention_mask[:, -key.shape[2] :].bool()[:, index][:, None]  # (B, 1, T, C)
            present = present | (torch.arange(self.chunk_size, device=key.device) == 0)  # the token itself
        keys = key[:, :, index]  # (B, H, T, C, D)
        values = value[:, :, index]  # (B, H, T, C, D)
        if self.zero_missing_keys:  # an empty partner: zero key and value, kept in the softmax
            keys = keys.masked_fill(~present[..., None], 0.0)
            values = values.masked_fill(~present[..., None], 0.0)
        scores = torch.einsum("bhtd,bhtcd->bhtc", query, keys) * self.head_dim**-0.5
        scores = scores + self.offset_bias[None, :, None, :]  # r_{h,j}
        if not self.zero_missing_keys:
            scores = scores.masked_fill(~present, torch.finfo(scores.dtype).min)
        probs = torch.softmax(scores.float(), dim=-1).to(value.dtype)  # (B, H, T, C)
        out = torch.einsum("bhtc,bhtcd->bthd", probs, values)  # (B, T, H, D)
        if recorder is not None and recorder.output_attentions:
            weights = probs.masked_fill(~present, 0.0)  # a missing key's weight multiplies a zero value
            recorder.add_attention(dense_attention_map(weights, index, key.shape[2]))  # (B, H, T, S)
        return self.merge_heads(out)  # (B, T, d)
