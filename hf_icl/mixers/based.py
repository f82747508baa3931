"""Based linear attention (Arora et al., 2024, "Simple linear attention language models balance the
recall-throughput tradeoff", §4, eqs. 2–3): linear attention with the 2nd-order Taylor feature map of exp.

    φ(x) = [1, x / d_f^{1/4}, (x ⊗ x)_{i≤j} / (√d_f · (√2 if i = j else 1))]
    φ(q)·φ(k) = 1 + q·k/√d_f + (q·k)²/(2 d_f)
    y_t = Σ_{j ≤ t} φ(q_t)·φ(k_j) v_j / Σ_{j ≤ t} φ(q_t)·φ(k_j)

with q, k projected to d_f = `based_feature_dim` (16, as zoology and flash-linear-attention's `BasedLinearAttention`)
per head and the upper triangle of x ⊗ x (1 + d_f + d_f(d_f + 1)/2 = 153 features at d_f = 16). The Taylor kernel is
always > 0 ((s + 1)² + 1 > 0), so every row is a distribution over the keys. Numerator and denominator share one
linear recurrence (`ops.linear_recurrence`) on v with a column of ones appended: state (153, Dv + 1) per head,
chunked for training, O(1) per decoded token. The Based architecture pairs these layers with short sliding-window
attention (`sliding_window_attention`); DESIGN's "hybrids are configuration".
"""

from __future__ import annotations

import functools

import torch
from torch import nn

from .ops.cpu_paths import compiled_backend
from .ops.linear_recurrence import linear_recurrence
from .ops.mixing_maps import MixingMap, causal_key_mask, report_mixing_map
from .ops.padding import token_mask
from .ops.residual import residual_projection
from .registry import ConfigField, positive_int, register_mixer
from .shared_fields import SCAN_CHUNK_SIZE

try:
    from .ops.taylor_numba import NumbaTaylorFeatures
except ImportError:  # numba is missing: the PyTorch form
    NumbaTaylorFeatures = None

BASED_FEATURE_DIM = ConfigField("based_feature_dim", 16, "width d_f of Based's q/k before the Taylor feature map",
                                check=positive_int)  # fmt: skip
EPS = 1e-12  # as flash-linear-attention: only a row with no real key (left padding) has a zero denominator


@functools.lru_cache(maxsize=16)
def _pair_selector(dim: int, dtype: torch.dtype, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """The one-hot (d, 2P) selector of the pairs (x_i, x_j), i ≤ j (the x_i columns, then the x_j columns), and their
    weights (P,); built once per width, dtype and device (every forward and every decoded token reads them), never
    as inference tensors (a first call under `torch.inference_mode` would otherwise keep ones training cannot use)."""
    with torch.inference_mode(False):
        i, j = torch.triu_indices(dim, dim, device=device)
        weight = torch.where(i == j, 2**-0.5, 1.0).to(dtype) / dim**0.5  # diagonal terms appear once
        selector = torch.zeros(dim, 2 * len(i), dtype=dtype, device=device)
        selector[i, torch.arange(len(i), device=device)] = 1.0
        selector[j, torch.arange(len(j), device=device) + len(i)] = 1.0
    return selector, weight


def taylor_features(x: torch.Tensor) -> torch.Tensor:
    """φ(x) (..., 1 + d + d(d+1)/2) of x (..., d): the 2nd-order Taylor feature map of exp(q·k/√d).

    The pairs (x_i, x_j), i ≤ j, are taken by one product with a one-hot (d, 2P) selector rather than by indexing,
    whose backward (an accumulating `index_put`) cost a sixth of a Based training step on the CPU; a product with
    one-hot columns is exact. On plain float32 CPU tensors the compiled kernel of `ops/taylor_numba.py` computes the
    same values in one pass each way (the PyTorch form is its oracle).
    """
    if x.dtype == torch.float32 and compiled_backend(NumbaTaylorFeatures is not None, x) == "numba":
        return NumbaTaylorFeatures.apply(x)  # one pass each way (`ops/taylor_numba.py`)
    dim = x.shape[-1]
    selector, weight = _pair_selector(dim, x.dtype, x.device)
    first, second = (x @ selector).chunk(2, dim=-1)  # (..., P) each: x_i and x_j of every pair
    quadratic = first * second * weight
    return torch.cat([torch.ones_like(x[..., :1]), x / dim**0.25, quadratic], dim=-1)


@register_mixer("based", config_fields=(BASED_FEATURE_DIM, SCAN_CHUNK_SIZE))
class BasedLinearAttention(nn.Module):
    """Based's Taylor linear attention: normalised, no decay, feature-mapped q and k of width `based_feature_dim`.

    Args:
        config: an `ICLConfig` (uses hidden_size, num_attention_heads, based_feature_dim, use_bias, scan_chunk_size).
        layer_idx (`int`): index of the layer, used to find this layer's state in the cache.
    """

    reads_shared_fields = ("num_attention_heads",)  # ICLConfig.MIXER_ONLY_FIELDS it reads

    recurrent = True  # numerator and denominator states
    returns_attention_maps = False  # normalised, but not softmax: the exact map comes from `mixing_map`
    mixing_maps = True
    map_axis = "heads"
    map_rows_sum_to_one = True

    def __init__(self, config, layer_idx: int):
        super().__init__()
        self.layer_idx, self.chunk_size = layer_idx, config.scan_chunk_size
        width, bias, self.feature_dim = config.hidden_size, config.use_bias, config.based_feature_dim
        self.num_heads = config.num_attention_heads
        self.head_dim = width // self.num_heads
        self.q_proj = nn.Linear(width, self.feature_dim * self.num_heads, bias=bias)
        self.k_proj = nn.Linear(width, self.feature_dim * self.num_heads, bias=bias)
        self.v_proj = nn.Linear(width, width, bias=bias)
        self.out_proj = residual_projection(nn.Linear(width, width, bias=bias))

    def state_size(self) -> int:
        features = 1 + self.feature_dim + self.feature_dim * (self.feature_dim + 1) // 2
        return self.num_heads * features * (self.head_dim + 1) * 4

    def coefficients(self, hidden_states):
        """φ(q), φ(k) (B, H, T, F) and v (B, H, T, Dv)."""
        batch, length, _ = hidden_states.shape
        q, k = (
            p(hidden_states).view(batch, length, self.num_heads, -1).transpose(1, 2) for p in (self.q_proj, self.k_proj)
        )
        v = self.v_proj(hidden_states).view(batch, length, self.num_heads, -1).transpose(1, 2)
        return taylor_features(q), taylor_features(k), v

    def attend(self, phi_q, phi_k, v, mask, state):
        ones = torch.ones_like(v[..., :1])
        both = linear_recurrence(phi_q, phi_k, torch.cat([v, ones], -1), mask=mask, state=state,
                                 chunk_size=self.chunk_size)  # fmt: skip
        return both[..., :-1] / (both[..., -1:] + EPS)  # (B, H, T, Dv)

    def forward(
        self, hidden_states, attention_mask=None, cache=None, input_ids=None, position_ids=None, recorder=None, **kw
    ):
        mask = token_mask(attention_mask, hidden_states.shape[1])
        report_mixing_map(self, hidden_states, attention_mask, cache, recorder)
        state = cache.layer_state(self.layer_idx) if cache is not None else None
        out = self.attend(*self.coefficients(hidden_states), mask, state)
        return self.out_proj(out.transpose(1, 2).reshape(*hidden_states.shape[:2], -1))  # (B, T, d)

    def mixing_map(self, hidden_states, mask=None) -> MixingMap:
        phi_q, phi_k, v = self.coefficients(hidden_states)
        scores = (phi_q @ phi_k.transpose(-1, -2)) * causal_key_mask(mask, v.shape[2], v.device)  # (B, H, T, T)
        maps = scores / (scores.sum(-1, keepdim=True) + EPS)
        return MixingMap(maps, v, self.attend(phi_q, phi_k, v, mask, None))
