"""Sliding-window causal softmax attention (Beltagy et al., 2020, "Longformer" §3.1; the short local attention of
Based, Arora et al., 2024, §4): query t attends to keys t − W + 1 … t only.

    A = softmax(Q Kᵀ / √d_h + M) V,   M_tj = 0 if 0 ≤ t − j < W and key j is not padding, else −∞

With a window the KV cache is bounded: decoding keeps the last W − 1 keys and values (zeros before the sequence
start, masked by position), so the state is fixed, 2 (W − 1) d floats, and each token costs O(W d): the mixer is
recurrent in the registry's sense and a Based stack decodes in O(1) per token. RoPE (`position_embedding="rope"`)
rotates q and k at sequence indices, so left padding (whose keys are masked) keeps distances.

Training (no cache, T > 2W) runs SDPA block by block (`banded_attention`): the queries in blocks of W, each block
over the keys of its own block and the one before (2W keys, the band mask inside), O(T · 2W) work instead of the
O(T²) of one SDPA call with a banded (T, T) mask, which the shorter inputs and the cached path still take
(`benchmarks/zoo_step_cost.py`: at Based's recipe shape, W = 64 and T = 384, a window layer's forward and backward
cost about 0.55 of the full-mask call's, AMD EPYC, one thread). With `output_attentions` the eager path reports the
probabilities as a (B, H, T, S) map over all S positions so far.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .ops.heads import FusedQKVMixer
from .positions import rope_rotate
from .registry import ConfigField, positive_int, register_mixer

ATTENTION_WINDOW = ConfigField("attention_window", 64, "window W of sliding-window attention (keys t − W + 1 … t)",
                               check=positive_int)  # fmt: skip


@register_mixer("sliding_window_attention", config_fields=(ATTENTION_WINDOW,))
class SlidingWindowAttention(FusedQKVMixer):
    """Multi-head causal attention over the last `attention_window` positions, with a bounded KV cache.

    Args:
        config: an `ICLConfig` (uses hidden_size, num_attention_heads, use_bias, position_embedding, rope_theta,
            attention_window).
        layer_idx (`int`): index of the layer, used to find this layer's state in the cache.
    """

    reads_shared_fields = ("num_attention_heads", "rope_theta")  # ICLConfig.MIXER_ONLY_FIELDS it reads
    position_schemes = ("rope",)  # relative position_embedding values it applies

    recurrent = True  # the cache keeps W − 1 keys and values: fixed size, O(W) per token
    returns_attention_maps = True  # softmax attention
    map_axis = "heads"
    map_rows_sum_to_one = True

    def __init__(self, config, layer_idx: int):
        super().__init__(config, layer_idx)
        self.config, self.window = config, config.attention_window

    def state_size(self) -> int:
        return 2 * (self.window - 1) * self.num_heads * self.head_dim * 4  # last W − 1 keys and values, fp32

    def forward(
        self, hidden_states, attention_mask=None, cache=None, input_ids=None, position_ids=None, recorder=None, **kw
    ):
        batch, length, _ = hidden_states.shape
        query, key, value = self.split_heads(hidden_states)  # each (B, H, T, D)
        past = cache.get_seq_length() if cache is not None else 0
        if self.config.position_embedding == "rope":
            query, key = rope_rotate(query, key, past, self.config.rope_theta)
        state = cache.layer_state(self.layer_idx) if cache is not None else None
        kept = 0
        if state is not None:  # W − 1 slots before the new keys, zeros where the sequence had not started
            kept = self.window - 1
            previous = state.get("key")
            if previous is None:
                previous = key.new_zeros(batch, self.num_heads, kept, self.head_dim)
            key = torch.cat([previous, key], dim=2)  # (B, H, W − 1 + T, D)
            value = torch.cat([previous if state.get("value") is None else state.get("value"), value], dim=2)
            state.set("key", key[:, :, key.shape[2] - kept :])
            state.set("value", value[:, :, value.shape[2] - kept :])
        positions = torch.arange(key.shape[2], device=key.device) + past - kept  # absolute index of each key slot
        distance = (torch.arange(length, device=key.device) + past)[:, None] - positions[None]  # (T, S)
        allowed = (distance >= 0) & (distance < self.window) & (positions >= 0)[None]
        allowed = allowed[None, None]  # (1, 1, T, S)
        if attention_mask is not None:
            real = attention_mask[:, positions.clamp(min=0)].bool()  # (B, S)
            allowed = (allowed & real[:, None, None]) | (distance == 0)[None, None]  # a padding query sees itself
        maps = recorder is not None and recorder.output_attentions
        if maps:
            scores = (query @ key.transpose(-1, -2)) * self.head_dim**-0.5
            probs = torch.softmax(scores.float().masked_fill(~allowed, float("-inf")), dim=-1).to(value.dtype)
            out = probs @ value
            full = probs.new_zeros(batch, self.num_heads, length, past + length)
            start = max(0, kept - past)  # slots that hold real positions
            full[..., positions[start] :] = probs[..., start:]
            recorder.add_attention(full)  # (B, H, T, S)
        elif state is None and length > 2 * self.window:
            real = None if attention_mask is None else attention_mask.bool()
            out = banded_attention(query, key, value, self.window, real)
        else:
            out = F.scaled_dot_product_attention(query, key, value, attn_mask=allowed)
        return self.merge_heads(out.transpose(1, 2))  # (B, T, d)


def _blocks(x, window, blocks, pad_front):
    """(B, H, T, D) → (B, H·N, W or 2W, D): the N query blocks of W positions (`pad_front` False), or each block's
    keys, the block before it then its own (`pad_front` True, W zero positions before the first block)."""
    batch, heads, length, dim = x.shape
    tail = blocks * window - length
    if not pad_front:
        return F.pad(x, (0, 0, 0, tail)).reshape(batch, heads * blocks, window, dim)
    padded = F.pad(x, (0, 0, window, tail)).view(batch, heads, blocks + 1, window, dim)  # (B, H, N + 1, W, D)
    pairs = torch.cat([padded[:, :, :-1], padded[:, :, 1:]], dim=3)  # (B, H, N, 2W, D)
    return pairs.view(batch, heads * blocks, 2 * window, dim)


def banded_attention(query, key, value, window: int, real=None):
    """Causal softmax attention over the last `window` keys, block by block (O(T · 2W), not O(T²)).

    Query t = nW + i (block n, 0 ≤ i < W) sees key slot j of its block's 2W keys, position s = (n − 1)W + j, when
    0 ≤ t − s = i + W − j < W, s ≥ 0 and key s is real; a padding query always sees itself (as the banded mask).

    Args:
        query, key, value (`torch.Tensor`): (B, H, T, D).
        window (`int`): W, keys t − W + 1 … t.
        real (`torch.Tensor`, *optional*): (B, T) boolean mask of real (non-padding) keys.

    Returns:
        (B, H, T, D), as `F.scaled_dot_product_attention` with the banded (T, T) mask.
    """
    batch, heads, length, dim = query.shape
    blocks = -(-length // window)
    device = query.device
    slot = torch.arange(2 * window, device=device)  # j
    distance = torch.arange(window, device=device)[:, None] + window - slot  # (W, 2W): t − s
    started = (torch.arange(blocks, device=device)[:, None] - 1) * window + slot >= 0  # (N, 2W): s ≥ 0
    allowed = ((distance >= 0) & (distance < window))[None] & started[:, None]  # (N, W, 2W)
    allowed = allowed[None, None]  # (1, 1, N, W, 2W)
    if real is not None:
        keys_real = _blocks(real[:, None, :, None].to(query.dtype), window, blocks, pad_front=True) > 0  # (B, N, 2W, 1)
        allowed = (allowed & keys_real[:, None, :, None, :, 0]) | (distance == 0)  # (B, 1, N, W, 2W)
    allowed = allowed.expand(-1, heads, -1, -1, -1).reshape(-1, heads * blocks, window, 2 * window)
    out = F.scaled_dot_product_attention(
        _blocks(query, window, blocks, pad_front=False),
        *(_blocks(x, window, blocks, pad_front=True) for x in (key, value)),
        attn_mask=allowed,
    )  # (B, H·N, W, D)
    return out.view(batch, heads, blocks * window, dim)[:, :, :length]
