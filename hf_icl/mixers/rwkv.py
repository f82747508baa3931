"""RWKV-4 time mixing (Peng et al., 2023; paper 1, Appendix A.8, eqs. 62–67).

Token shift mixes each token with the previous one per channel, then WKV averages the values with decay e^{−w}:

    x^k_i = μ_k ⊙ x_i + (1 − μ_k) ⊙ x_{i−1}   (likewise μ_v, μ_r);   k_i, v_i, r_i = W_k x^k_i, W_v x^v_i, W_r x^r_i
    a_i = e^{−w} ⊙ a_{i−1} + e^{k_i} ⊙ v_i,   b_i = e^{−w} ⊙ b_{i−1} + e^{k_i}                     (63, 64)
    z_i = (a_{i−1} + e^{u+k_i} ⊙ v_i) / (b_{i−1} + e^{u+k_i})                                       (65)
    y_i = W_o (σ(r_i) ⊙ z_i)                                                                       (67)

with w = exp(`time_decay`) > 0 and u = `time_first` per channel. z_i is a per-channel softmax-weighted average of
v_j with logits k_j − w·(i−1−j) (j < i) and u + k_i (j = i), so, as in the official RWKV-4 kernels, every sum is
kept relative to its running maximum exponent p: the state is (a, b, p) with true a = a·e^p and b = b·e^p.

Parallel form (training, prefill) without a Python loop over time: split T into chunks of C tokens; (1) each chunk
summarises its own tokens as a state at its end; (2) the state entering each chunk is the same stable sum over the
summaries of all earlier chunks and the cached state; (3) within a chunk the logits form a (C × C) matrix per
channel, masked and max-subtracted, to which the entering state adds one term. Work O(T·C + (T/C)²) per channel,
least at C ≈ (2T)^{1/3}: `scan_chunk_size` is the largest chunk used, and shorter inputs take C = ⌈(2T)^{1/3}⌉
(6 at T = 82; 16 from T = 1,688 on; `benchmarks/regression_training_step.py` times the T = 82 case). The result
does not depend on C. On the CPU, float32 input from an empty state without padding (training, prefill) takes the
compiled O(T)-per-channel kernel `ops.wkv_numba.NumbaWKV` instead, with this form as its oracle (`wkv`;
`HF_ICL_SCAN_BACKEND=torch` forces this one).
Recurrent form (decoding): the O(1) update `wkv_step`. Padding: WKV skips padded tokens exactly (distances count
real tokens only, so padding neither adds to the state nor decays it); token shift reads zeros in their place, which
is exact for left padding (a row's first real token has no predecessor). The cache keeps the last input (token
shift) and (a, b, p).

Block: as in paper 1's reference code (berlino/seq_icl runs `rwkv.py` through the `lm_simple` block), this mixer
is RWKV-4's time mixing only; the skeleton's MLP stands in for RWKV's channel mixing.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from transformers import initialization as init

from .ops.mixing_maps import MixingMap, report_mixing_map
from .ops.padding import token_mask, zero_padding
from .ops.residual import residual_projection
from .ops.selective_scan import scan_backend
from .registry import register_mixer
from .shared_fields import SCAN_CHUNK_SIZE

try:
    from .ops.wkv_numba import NumbaWKV
except ImportError:  # numba is missing: the torch path
    NumbaWKV = None

NEG = -1e38  # "log 0" of an empty state (finite, so NEG − NEG = 0 instead of NaN), as the official kernels use


def stable_sum(logits, weights_a, weights_b, values, keep):
    """Σ_j e^{logit_j} (value_j·a_j, b_j) over the masked axis −2, as (Σa, Σb, max exponent) relative to the max.

    Shapes broadcast to (..., J, C); `keep` (..., J, 1) selects the terms that exist.
    """
    logits = torch.where(keep, logits, NEG)
    top = logits.amax(dim=-2, keepdim=True).detach()  # (..., 1, C); the result does not depend on it
    scale = torch.exp(logits - top) * keep
    return (scale * values * weights_a).sum(-2), (scale * weights_b).sum(-2), top.squeeze(-2)


def balanced_chunk_size(length: int, largest: int) -> int:
    """⌈(2T)^{1/3}⌉, at most `largest`: balances the in-chunk work T·C against the cross-chunk (T/C)²."""
    return max(1, min(largest, math.ceil((2 * length) ** (1 / 3))))


def wkv_chunked(w, u, k, v, state=None, mask=None, chunk_size: int = 16):
    """Stable chunked WKV (eqs. 63–65) over a whole sequence.

    Args:
        w (`Tensor` (C,)): decay rates > 0; the state decays by e^{−w} per real token.
        u (`Tensor` (C,)): bonus of the current token.
        k, v (`Tensor` (B, T, C)): keys and values.
        state (`tuple` of three (B, C) tensors, *optional*): (a, b, p) before the first token; empty if `None`.
        mask (`Tensor` (B, T) bool, *optional*): real tokens; padding is skipped.
        chunk_size (`int`): tokens per chunk C.

    Returns:
        z (B, T, C) and the state (a, b, p) after the last token.
    """
    batch, length, channels = k.shape
    size = max(1, min(chunk_size, length))
    chunks = math.ceil(length / size)
    real = torch.ones(1, length, dtype=torch.bool, device=k.device) if mask is None else mask  # (B|1, T)
    if chunks * size > length:  # pad the tail with skipped tokens
        extra = chunks * size - length
        k, v = (nn.functional.pad(t, (0, 0, 0, extra)) for t in (k, v))
        real = nn.functional.pad(real, (0, extra), value=False)
    real = real.view(real.shape[0], chunks, size)  # (B|1, N, C')
    count = real.flatten(1).cumsum(1).to(k.dtype).view_as(real)  # real tokens up to and including t
    before = count - real.to(k.dtype)  # real tokens strictly before t
    k, v = k.view(batch, chunks, size, channels), v.view(batch, chunks, size, channels)  # (B, N, C', C)

    # (1) each chunk's own tokens as a state at its end (position E_n = count at its last token)
    end = count[..., -1]  # (B|1, N)
    to_end = (end[..., None] - count)[..., None]  # (B|1, N, C', 1) decays from token j to the chunk end
    summary = stable_sum(k - w * to_end, 1.0, 1.0, v, real[..., None])  # three (B, N, C)

    # (2) state entering chunk n (and after the last one): the cached state at 0 plus every earlier summary
    if state is None:
        zeros = k.new_zeros(batch, channels)
        state = (zeros, zeros, torch.full_like(zeros, NEG))
    a_src, b_src, p_src = (torch.cat([s[:, None], t], dim=1) for s, t in zip(state, summary))  # (B, N+1, C)
    at = torch.cat([end.new_zeros(end.shape[0], 1), end], dim=1)  # (B|1, N+1) positions of sources = of queries
    gap = (at[:, :, None] - at[:, None, :])[..., None]  # (B|1, N+1 query, N+1 source, 1)
    seen = torch.ones(chunks + 1, chunks + 1, dtype=torch.bool, device=k.device).tril()[..., None]
    carry = stable_sum(p_src[:, None] - w * gap, a_src[:, None], b_src[:, None], 1.0, seen)  # three (B, N+1, C)
    a0, b0, p0 = (t[:, :-1, None] for t in carry)  # (B, N, 1, C) entering each chunk
    final = tuple(t[:, -1] for t in carry)

    # (3) inside each chunk: logits k_j − w·(before_i − count_j) for real j < i; the token's own bonus term u + k_i
    # and the carried state enter separately
    earlier = torch.ones(size, size, dtype=torch.bool, device=k.device).tril(-1)  # j < i
    dist = (before[..., :, None] - count[..., None, :])[..., None]  # (B|1, N, C'(i), C'(j), 1)
    logits = torch.addcmul(k[:, :, None], w, -dist)  # (B, N, C', C', C)
    keep = (earlier & real[:, :, None, :])[..., None]  # (B|1, N, C', C', 1)
    logits = logits.masked_fill_(~keep, NEG)
    own = u + k  # (B, N, C', C)
    carry_logit = p0 - w * (before - at[:, :-1, None])[..., None]  # (B, N, C', C)
    top = torch.maximum(torch.maximum(logits.amax(dim=-2), carry_logit), own).detach()
    # terms below e^−60 of the largest are negligible; clamping them keeps exp off its slow underflow path
    scale = torch.exp((logits - top[..., None, :]).clamp_(min=-60.0)) * keep
    from_own, from_carry = torch.exp(own - top), torch.exp(carry_logit - top)
    numerator = (scale * v[:, :, None]).sum(-2) + from_own * v + a0 * from_carry
    denominator = scale.sum(-2) + from_own + b0 * from_carry
    z = (numerator / denominator).reshape(batch, chunks * size, channels)[:, :length]
    return z, final


def wkv(w, u, k, v, state=None, mask=None, chunk_size: int = 16):
    """WKV over a whole sequence (`wkv_chunked`'s contract): the compiled CPU kernel (`ops.wkv_numba`) for float32
    input from an empty state without padding, where `scan_backend` (`HF_ICL_SCAN_BACKEND`) allows numba; the
    chunked torch form, its oracle, otherwise."""
    in_scope = state is None and mask is None and all(t.dtype == torch.float32 for t in (w, u, k, v))
    if NumbaWKV is not None and in_scope and scan_backend(w, u, k, v) == "numba":
        z, *final = NumbaWKV.apply(w.contiguous(), u.contiguous(), k.contiguous(), v.contiguous())
        return z, tuple(final)
    return wkv_chunked(w, u, k, v, state, mask, chunk_size)


def wkv_step(w, u, k, v, state, real=None):
    """One recurrent WKV step (the official RWKV-4 update): k, v (B, C); state (a, b, p) each (B, C).

    Returns z (B, C) and the next state; rows where `real` (B,) is False keep their state.
    """
    a, b, p = state
    top = torch.maximum(p, u + k)
    old, new = torch.exp(p - top), torch.exp(u + k - top)
    z = (old * a + new * v) / (old * b + new)  # eq. (65)
    decayed = p - w
    top = torch.maximum(decayed, k)
    old, new = torch.exp(decayed - top), torch.exp(k - top)
    following = (old * a + new * v, old * b + new, top)  # eqs. (63, 64)
    if real is not None:
        following = tuple(torch.where(real[:, None], f, s) for f, s in zip(following, state))
    return z, following


@register_mixer("rwkv", config_fields=(SCAN_CHUNK_SIZE,))
class RWKVTimeMix(nn.Module):
    """RWKV-4 time mixing: token shift, WKV with per-channel decay and bonus, sigmoid receptance gate.

    Args:
        config: an `ICLConfig` (uses hidden_size, num_hidden_layers, scan_chunk_size).
        layer_idx (`int`): index of the layer (its cache slot; the RWKV-4 init depends on depth).
    """

    recurrent = True  # last input + (a, b, p)
    returns_attention_maps = False
    mixing_maps = True  # per channel: a softmax over j ≤ t of k_j − w·(distance) and u + k_t (eq. 65)
    map_axis = "channels"
    map_rows_sum_to_one = True

    def __init__(self, config, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx
        self.num_layers = config.num_hidden_layers
        self.chunk_size = config.scan_chunk_size
        width = config.hidden_size
        self.time_decay = nn.Parameter(torch.zeros(width))  # w = exp(time_decay)
        self.time_first = nn.Parameter(torch.zeros(width))  # u
        self.time_mix_k = nn.Parameter(torch.ones(width))  # μ_k
        self.time_mix_v = nn.Parameter(torch.ones(width))  # μ_v
        self.time_mix_r = nn.Parameter(torch.ones(width))  # μ_r
        self.key = nn.Linear(width, width, bias=False)
        self.value = nn.Linear(width, width, bias=False)
        self.receptance = nn.Linear(width, width, bias=False)
        self.out_proj = residual_projection(nn.Linear(width, width, bias=False))

    def state_size(self) -> int:
        return 4 * self.time_decay.numel() * 4  # last input + (a, b, p), fp32

    @torch.no_grad()
    def reset_mixer_parameters(self):
        """RWKV-4 init: decay speeds spread from −5 to 3 over channels, u = log 0.3 + zigzag, μ ramps by depth."""
        width = self.time_decay.numel()
        depth = self.layer_idx / max(self.num_layers - 1, 1)  # 0 → 1
        shallow = 1.0 - self.layer_idx / self.num_layers  # 1 → ~0
        channel = torch.arange(width, dtype=torch.float32)
        init.copy_(self.time_decay, -5 + 8 * (channel / max(width - 1, 1)) ** (0.7 + 1.3 * depth))
        init.copy_(self.time_first, math.log(0.3) + ((channel + 1) % 3 - 1) * 0.5)
        ramp = channel / width
        init.copy_(self.time_mix_k, ramp**shallow)
        init.copy_(self.time_mix_v, ramp**shallow + 0.3 * depth)
        init.copy_(self.time_mix_r, ramp ** (0.5 * shallow))

    def shifted(self, hidden_states, mask, last):
        """x (padding zeroed), k, v (float32) and r (B, T, d) after the token shift from `last` (B, d)."""
        x = zero_padding(hidden_states, mask)  # padding reads as "no previous token" in the shift
        last = x.new_zeros(x.shape[0], x.shape[2]) if last is None else last
        previous = torch.cat([last[:, None], x[:, :-1]], dim=1)  # (B, T, d) token shift
        k = self.key(previous + self.time_mix_k * (x - previous)).float()  # (B, T, d)
        v = self.value(previous + self.time_mix_v * (x - previous)).float()
        r = self.receptance(previous + self.time_mix_r * (x - previous))
        return x, k, v, r

    def mixing_map(self, hidden_states, mask=None) -> MixingMap:
        """Per channel: z_t = Σ_j softmax_j(ℓ_tj) v_j with ℓ_tj = k_j − w·(real tokens strictly between j and t)
        for real j < t and ℓ_tt = u + k_t (eq. 65 unrolled), computed with the max subtracted; z is before σ(r)."""
        _, k, v, _ = self.shifted(hidden_states, mask, None)
        batch, length, width = k.shape
        w, u = torch.exp(self.time_decay.float()), self.time_first.float()
        real = torch.ones(1, length, dtype=torch.bool, device=k.device) if mask is None else mask
        count = real.cumsum(1).to(k.dtype)  # real tokens up to and including t
        before = count - real.to(k.dtype)
        distance = (before[:, :, None] - count[:, None, :])[:, None]  # (B|1, 1, T, T)
        logits = k.transpose(1, 2)[:, :, None, :] - w[None, :, None, None] * distance  # (B, d, T, T)
        earlier = torch.ones(length, length, dtype=torch.bool, device=k.device).tril(-1)[None, None]
        keep = earlier & real[:, None, None, :]
        logits = logits.masked_fill(~keep, float("-inf"))
        own = torch.diag_embed(u[:, None] + k.transpose(1, 2))  # (B, d, T, T) with u + k_t on the diagonal
        eye = torch.eye(length, dtype=torch.bool, device=k.device)
        maps = torch.softmax(torch.where(eye, own, logits), dim=-1)
        z, _ = wkv_chunked(w, u, k, v, None, mask, self.chunk_size)
        return MixingMap(maps, v.transpose(1, 2)[..., None], z.transpose(1, 2)[..., None])

    def forward(
        self, hidden_states, attention_mask=None, cache=None, input_ids=None, position_ids=None, recorder=None, **kw
    ):
        batch, length, width = hidden_states.shape
        mask = token_mask(attention_mask, length)
        report_mixing_map(self, hidden_states, attention_mask, cache, recorder)
        state = cache.layer_state(self.layer_idx) if cache is not None else None
        last = state.get("shift") if state is not None else None  # (B, d)
        x, k, v, r = self.shifted(hidden_states, mask, last)
        last = x.new_zeros(batch, width) if last is None else last
        w, u = torch.exp(self.time_decay.float()), self.time_first.float()
        carried = None if state is None or state.get("a") is None else (state.get("a"), state.get("b"), state.get("p"))
        if carried is not None and length == 1:  # decoding: O(1) per token
            z, carried = wkv_step(w, u, k[:, 0], v[:, 0], carried, None if mask is None else mask[:, 0])
            z = z[:, None]
        else:
            z, carried = wkv(w, u, k, v, carried, mask, balanced_chunk_size(length, self.chunk_size))
        if state is not None:
            newest = x[:, -1] if mask is None else torch.where(mask[:, -1:], x[:, -1], last)
            state.set("shift", newest)
            for name, tensor in zip("abp", carried):
                state.set(name, tensor)
        return self.out_proj(torch.sigmoid(r) * z.to(r.dtype))  # (B, T, d)
