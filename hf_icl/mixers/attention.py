"""Causal multi-head softmax attention (Vaswani et al., 2017; paper 1, Appendix A.3; paper 4, §2.2).

    A = softmax(Q Kᵀ / √d_h + M) V,   M_ij = b_h(i − j) if j ≤ i and key j is not padding, else −∞

with the relative scheme of `config.position_embedding` (see `positions.py`): RoPE rotates Q and K, ALiBi sets
b_h(d) = −m_h·d, Hard-ALiBi masks head h < M beyond distance h; learned/NoPE leave b = 0.

Parallel form: one call to the `transformers` attention interface (`eager` below, or `sdpa`, selected by
`config._attn_implementation`); a call whose block context carries a `recorder` asking for attention maps takes
the eager path and reports A's probabilities (B, H, T, S) to it. Recurrent form: the cache keeps every key and
value, so a decoding step attends one query over the stored keys (O(T) per token; attention has no O(1) state,
and `state_size()` is `None`).
"""

from __future__ import annotations

import torch
from torch import nn
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

from .ops.heads import FusedQKVMixer
from .positions import MASKED_SCHEMES, relative_position_mask, rope_rotate
from .registry import ConfigField, non_negative_int, register_mixer


def eager_attention_forward(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """Reference attention: explicit scores and softmax. Boolean masks (True = may attend) or additive floats."""
    scores = torch.matmul(query, key.transpose(-1, -2)) * scaling  # (B, H, T, S)
    if attention_mask is not None and attention_mask.dtype == torch.bool:
        scores = scores.masked_fill(~attention_mask, torch.finfo(scores.dtype).min)
    elif attention_mask is not None:
        scores = scores + attention_mask  # additive float mask (e.g. ALiBi)
    elif query.shape[2] > 1:
        causal = torch.ones(query.shape[2], key.shape[2], dtype=torch.bool, device=query.device)
        scores = scores.masked_fill(~causal.tril(key.shape[2] - query.shape[2]), torch.finfo(scores.dtype).min)
    probs = torch.softmax(scores.float(), dim=-1).to(value.dtype)
    probs = nn.functional.dropout(probs, p=dropout, training=module.training)
    return torch.matmul(probs, value).transpose(1, 2), probs  # (B, T, H, D)


def causal_padding_mask(attention_mask: torch.Tensor | None, query_len: int, key_len: int, device) -> torch.Tensor:
    """Boolean (B|1, 1, T, S) mask: query i (at absolute position S − T + i) sees keys j ≤ it that are not padding.

    Every query also sees itself, so a padding query (left padding) never has an empty row and never produces
    NaNs that could leak through a 0 × NaN product into real positions.
    """
    offset = key_len - query_len
    rows = torch.arange(query_len, device=device)[:, None] + offset
    cols = torch.arange(key_len, device=device)[None, :]
    mask = (cols <= rows)[None, None]  # (1, 1, T, S)
    if attention_mask is not None:
        mask = mask & attention_mask[:, None, None, -key_len:].bool()
        mask = mask | (cols == rows)[None, None]
    return mask


NUM_MASKED_HEADS = ConfigField(
    "num_masked_heads", 0, "Hard-ALiBi M: head h < M sees keys at distance 0..h, the rest are NoPE (P4 §2.2)",
    check=non_negative_int,
)  # fmt: skip


@register_mixer("attention", config_fields=(NUM_MASKED_HEADS,))
class CausalSelfAttention(FusedQKVMixer):
    """Multi-head causal self-attention with a fused QKV projection (GPT-2 layout).

    Args:
        config: an `ICLConfig` (uses hidden_size, num_attention_heads, use_bias, attention_dropout, dropout,
            position_embedding, rope_theta and this mixer's `num_masked_heads`).
        layer_idx (`int`): index of the layer, used to find this layer's state in the cache.
    """

    reads_shared_fields = ("num_attention_heads", "attention_dropout", "rope_theta")  # of MIXER_ONLY_FIELDS
    position_schemes = ("rope", "alibi", "hard_alibi")  # relative position_embedding values it applies

    recurrent = False  # the cache keeps every key and value: O(T) per decoded token
    returns_attention_maps = True  # softmax attention: rows of A are distributions over keys
    map_axis = "heads"
    map_rows_sum_to_one = True

    @staticmethod
    def check_config(config) -> None:
        """Hard-ALiBi needs masked heads, and at most one per head."""
        if not 0 <= config.num_masked_heads <= config.num_attention_heads:
            raise ValueError(
                f"num_masked_heads={config.num_masked_heads} must be in [0, {config.num_attention_heads}] "
                "(0..num_attention_heads)"
            )
        if config.position_embedding == "hard_alibi" and config.num_masked_heads == 0:
            raise ValueError("position_embedding='hard_alibi' needs num_masked_heads ≥ 1 (heads with a hard window)")

    def multiplications(self, length: int) -> int:
        """P5 Table 7: 3LD² (QKV) + 2L²D (QKᵀ, AV) + LD² (output projection)."""
        width = self.num_heads * self.head_dim
        return 4 * length * width * width + 2 * length * length * width

    def __init__(self, config, layer_idx: int):
        super().__init__(config, layer_idx)
        self.config = config
        self.scaling = self.head_dim**-0.5
        self.is_causal = True

    def state_size(self) -> int | None:
        return None

    def forward(
        self, hidden_states, attention_mask=None, cache=None, input_ids=None, position_ids=None, recorder=None, **kwargs
    ):
        length = hidden_states.shape[1]
        query, key, value = self.split_heads(hidden_states)  # each (B, H, T, D)
        state = cache.layer_state(self.layer_idx) if cache is not None else None
        past = state.get("key").shape[2] if state is not None and state.get("key") is not None else 0
        scheme = self.config.position_embedding
        if scheme == "rope":
            query, key = rope_rotate(query, key, past, self.config.rope_theta)
        if state is not None:
            if past:
                key = torch.cat([state.get("key"), key], dim=2)  # (B, H, S, D)
                value = torch.cat([state.get("value"), value], dim=2)
            state.set("key", key)
            state.set("value", value)
        mask = None
        if attention_mask is not None or (length > 1 and key.shape[2] > length) or scheme in MASKED_SCHEMES:
            mask = causal_padding_mask(attention_mask, length, key.shape[2], hidden_states.device)
            mask = relative_position_mask(
                scheme, mask, self.num_heads, self.config.num_masked_heads, hidden_states.dtype
            )
        maps = recorder is not None and recorder.output_attentions
        attend = eager_attention_forward
        if self.config._attn_implementation not in (None, "eager") and not maps:
            attend = ALL_ATTENTION_FUNCTIONS[self.config._attn_implementation]
        out, probs = attend(
            self,
            query,
            key,
            value,
            mask,
            dropout=self.config.attention_dropout if self.training else 0.0,
            scaling=self.scaling,
            is_causal=mask is None,
        )
        if maps:
            recorder.add_attention(probs)  # (B, H, T, S)
        return self.merge_heads(out)  # (B, T, d)
