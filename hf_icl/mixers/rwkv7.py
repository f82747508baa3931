"""RWKV-7 "Goose" time mixing (Peng et al., 2025, "RWKV-7 Goose with Expressive Dynamic State Evolution", §4,
eqs. 13–20), the generalised delta rule with a per-key-dim decay, transposed to S ∈ R^{Dk×Dv} (o_t = r_tᵀ S_t):

    x^□_t = x_t + (x_{t−1} − x_t) ⊙ μ_□                         token shift, □ ∈ {r, w, k, v, a, g}
    r, k, v = W_r x^r, W_k x^k, W_v x^v;   a = σ(LoRA_a(x^a));   g = LoRA_g(x^g)
    w_t = exp(−e^{−1/2} σ(LoRA_w(x^w))) ∈ (0.545, 1)^{Dk}        (decay per key dim)
    κ̂ = normalise_head(k ⊙ ξ),   k ← k ⊙ (1 + (a − 1) ⊙ α)      (removal key, replacement rate)
    S_t = (diag(w_t) − (κ̂_t ⊙ a_t) κ̂_tᵀ) S_{t−1} + k_t v_tᵀ        (eq. 16 with G = diag(w) − κ̂ᵀ(a ⊙ κ̂), transposed)
    o_t = r_tᵀ S_t;   y = W_o ((GroupNorm_head(o) + (r_t · (ρ ⊙ k_t)) v_t) ⊙ g)

as flash-linear-attention's `RWKV7Attention` (LoRA ranks, init). RWKV-7's value residual (later layers mixing in
layer 0's v, v ← lerp(v, v_first, σ(ν + LoRA_ν(x^v)))) is the block feature `value_residual`
(`block_features/value_residual.py`, on with `--override value_residual=true`): the mixer hands v and x^v to it
through `ops.value_transform` before the recurrence; without it every layer is RWKV-7's first. As in paper 1's
reference and the `rwkv` (RWKV-4) mixer here, the skeleton's FFN stands in for channel mixing.
The recurrence is `ops.delta_rule`'s DPLR form with d = w, b = κ̂ ⊙ a, a = −κ̂: chunks of at most 32 steps keep
the factored decays within e^{±20}; decoding is the O(Dk·Dv) step; on CUDA fla's `chunk_rwkv7` when it imports.
The exact map is that of the WKV state (v → o); the bonus term (r·ρk) v_t enters after the GroupNorm.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from transformers import initialization as init

from .ops.delta_rule import dplr_map, dplr_recurrence, use_fla_kernel
from .ops.l2_norm import l2_normalize
from .ops.mixing_maps import MixingMap, report_mixing_map
from .ops.padding import token_mask, zero_padding
from .ops.residual import residual_projection
from .ops.token_shift import token_shift_mixes
from .ops.value_transform import transform_values
from .registry import ConfigField, positive_int, register_mixer
from .shared_fields import SCAN_CHUNK_SIZE

try:  # pragma: no cover - CUDA only
    from fla.ops.rwkv7 import chunk_rwkv7
except Exception:  # ImportError; fla imports on a CPU-only machine with Triton, but its kernels cannot launch there
    chunk_rwkv7 = None

DECAY_BOUND = math.exp(-0.5)  # −log w ≤ e^{−1/2} per step
MAX_CHUNK = 32  # 32 · e^{−1/2} ≈ 19.4 nats: the factored decays of `dplr_chunked` stay within its bound
RWKV7_LOW_RANK = ConfigField("rwkv7_low_rank", 32, "rank of RWKV-7's decay, replacement-rate and gate LoRAs",
                             check=positive_int)  # fmt: skip
SHIFTS = ("r", "w", "k", "v", "a", "g")


class LoRA(nn.Module):
    """`W_2 act(W_1 x) (+ b)`: RWKV-7's low-rank data-dependent projections."""

    def __init__(self, width, rank, activation=None, bias=True):
        super().__init__()
        self.down, self.up = nn.Linear(width, rank, bias=False), nn.Linear(rank, width, bias=bias)
        self.activation = activation or nn.Identity()

    def forward(self, x):
        return self.up(self.activation(self.down(x)))


@register_mixer("rwkv7", config_fields=(RWKV7_LOW_RANK, SCAN_CHUNK_SIZE))
class RWKV7TimeMix(nn.Module):
    """RWKV-7 time mixing: token shift, generalised delta rule with per-key-dim decay, bonus term, output gate.

    Args:
        config: an `ICLConfig` (uses hidden_size, num_attention_heads, num_hidden_layers, rwkv7_low_rank,
            scan_chunk_size).
        layer_idx (`int`): index of the layer (its cache slot; the init depends on depth).
    """

    reads_shared_fields = ("num_attention_heads",)  # ICLConfig.MIXER_ONLY_FIELDS it reads

    recurrent = True  # last input + S
    returns_attention_maps = False
    mixing_maps = True
    map_axis = "heads"
    value_transform_point = True  # v and x^v pass through `ops.value_transform` (RWKV-7's value residual)

    def __init__(self, config, layer_idx: int):
        super().__init__()
        self.layer_idx, self.num_layers = layer_idx, config.num_hidden_layers
        self.chunk_size = min(config.scan_chunk_size, MAX_CHUNK)
        width, rank = config.hidden_size, config.rwkv7_low_rank
        self.num_heads = config.num_attention_heads
        self.head_dim = width // self.num_heads
        self.mix = nn.Parameter(torch.zeros(len(SHIFTS), width))  # μ_r, μ_w, μ_k, μ_v, μ_a, μ_g
        self.r_proj = nn.Linear(width, width, bias=False)
        self.k_proj = nn.Linear(width, width, bias=False)
        self.v_proj = nn.Linear(width, width, bias=False)
        self.w_lora = LoRA(width, rank, nn.Tanh())
        self.a_lora = LoRA(width, rank)
        self.g_lora = LoRA(width, rank, nn.Sigmoid(), bias=False)
        self.k_k = nn.Parameter(torch.zeros(width))  # ξ
        self.k_a = nn.Parameter(torch.zeros(width))  # α
        self.r_k = nn.Parameter(torch.zeros(self.num_heads, self.head_dim))  # ρ
        self.norm = nn.GroupNorm(self.num_heads, width, eps=self.head_dim * 1e-5)
        self.out_proj = residual_projection(nn.Linear(width, width, bias=False))

    @torch.no_grad()
    def reset_mixer_parameters(self) -> None:
        """flash-linear-attention's RWKV-7 init (token-shift ramps, decay and replacement-rate biases by channel)."""
        width = self.k_k.numel()
        depth = self.layer_idx / max(self.num_layers - 1, 1)  # 0 → 1
        shallow = 1.0 - self.layer_idx / self.num_layers  # 1 → ~0
        n = torch.arange(width, dtype=torch.float32)
        linear = n / max(width - 1, 1) - 0.5
        zigzag = ((n % self.head_dim) - (self.head_dim - 1) / 2) / max((self.head_dim - 1) / 2, 1)
        zigzag = zigzag * zigzag.abs()
        ramp = n / width
        powers = torch.tensor([0.2, 0.9, 0.7, 0.7, 0.9, 0.2])[:, None]  # μ_r, μ_w, μ_k, μ_v, μ_a, μ_g
        init.copy_(self.mix, 1.0 - ramp[None] ** (powers * shallow))
        decay = -6 + 6 * (n / max(width - 1, 1)) ** (1 + depth**0.3)
        init.copy_(self.w_lora.up.bias, decay + 0.5 + zigzag * 2.5)
        init.copy_(self.a_lora.up.bias, -0.19 + zigzag * 0.3 + linear * 0.4)
        init.copy_(self.k_k, 0.71 - linear * 0.1)
        init.constant_(self.k_a, 1.02)
        init.constant_(self.r_k, -0.04)
        init.constant_(self.norm.weight, ((self.layer_idx + 1) / self.num_layers) ** 0.7)
        init.zeros_(self.norm.bias)

    def state_size(self) -> int:
        return self.k_k.numel() * 4 + self.num_heads * self.head_dim * self.head_dim * 4  # shift + S, fp32

    def coefficients(self, hidden_states, mask, state, context=None):
        """r, k, v, a, b, log w (B, H, T, D), the bonus weights (B, H, T, 1) and the gate g (B, T, d); `context` is
        the block context a value transform reads."""
        batch, length, width = hidden_states.shape
        x = zero_padding(hidden_states, mask)  # padding reads as "no previous token" in the shift
        last = state.get("shift") if state is not None else None
        last = x.new_zeros(batch, width) if last is None else last
        if state is not None:
            state.set("shift", x[:, -1] if mask is None else torch.where(mask[:, -1:], x[:, -1], last))
        xr, xw, xk, xv, xa, xg = token_shift_mixes(x, last, self.mix)  # the six token shifts, one fused op
        r, k, v = self.r_proj(xr), self.k_proj(xk), self.v_proj(xv)
        v = transform_values(self, v, xv, context)  # (B, T, d)
        log_w = -DECAY_BOUND * torch.sigmoid(self.w_lora(xw).float())  # log w ∈ (−e^{−1/2}, 0)
        a = torch.sigmoid(self.a_lora(xa))
        heads = (batch, length, self.num_heads, self.head_dim)
        kk = l2_normalize((k * self.k_k).view(heads), eps=1e-12).transpose(1, 2)  # κ̂ (B, H, T, D), one pass
        k = k * (1 + (a - 1) * self.k_a)
        r, k, v, a, log_w = (t.reshape(heads).transpose(1, 2) for t in (r, k, v, a, log_w))
        bonus = (r * k * self.r_k[:, None]).sum(-1, keepdim=True)  # r · (ρ ⊙ k), (B, H, T, 1)
        return r, k, v, -kk, kk * a, log_w, bonus, self.g_lora(xg)

    def finish(self, out, v, bonus, gate):
        batch, heads, length, _ = out.shape
        # GroupNorm with a group per head is LayerNorm over each head's D channels, then the per-channel affine:
        # ATen's CPU group_norm (built for images) takes 2.1x this form's time at the tiny shape, forward + backward
        # (benchmarks/zoo_output_ops.py)
        shape = (heads, out.shape[-1])
        out = F.layer_norm(out.transpose(1, 2), shape[-1:], eps=self.norm.eps)  # (B, T, H, D)
        out = torch.addcmul(self.norm.bias.view(shape), out, self.norm.weight.view(shape))
        out = out + (bonus * v).transpose(1, 2)  # (B, T, H, D)
        return self.out_proj(out.reshape(batch, length, -1) * gate)  # (B, T, d)

    def forward(
        self, hidden_states, attention_mask=None, cache=None, input_ids=None, position_ids=None, recorder=None, **kw
    ):
        mask = token_mask(attention_mask, hidden_states.shape[1])
        report_mixing_map(self, hidden_states, attention_mask, cache, recorder, context=kw)
        state = cache.layer_state(self.layer_idx) if cache is not None else None
        r, k, v, a, b, log_w, bonus, gate = self.coefficients(hidden_states, mask, state, kw)
        if use_fla_kernel(r, state, chunk_rwkv7):  # pragma: no cover - CUDA only
            out = self.fla_prefill(r, k, v, a, b, log_w, mask, state)
        else:
            out = dplr_recurrence(r, k, v, a, b, log_w, mask, state, self.chunk_size)  # (B, H, T, D)
        return self.finish(out, v, bonus, gate)

    def fla_prefill(self, r, k, v, a, b, log_w, mask, state):  # pragma: no cover - CUDA only
        if mask is not None:
            k, b = (zero_padding(t.transpose(1, 2), mask).transpose(1, 2) for t in (k, b))
            log_w = log_w * mask[:, None, :, None].to(log_w.dtype)
        r, k, v, a, b, log_w = (t.transpose(1, 2) for t in (r, k, v, a, b, log_w))  # (B, T, H, D)
        out, final = chunk_rwkv7(r=r, w=log_w, k=k, v=v, a=a, b=b, scale=1.0, output_final_state=True)
        if state is not None:
            state.set("state", final.float())
        return out.transpose(1, 2)

    def mixing_map(self, hidden_states, mask=None, context=None) -> MixingMap:
        r, k, v, a, b, log_w, _, _ = self.coefficients(hidden_states, mask, None, context)
        out = dplr_recurrence(r, k, v, a, b, log_w, mask, None, self.chunk_size)
        return MixingMap(dplr_map(r, k, a, b, log_w, mask, self.chunk_size), v, out)
