"""Hyena token mixer (Poli et al., 2023, "Hyena Hierarchy", §3, Def. 3.1; paper 1, Appendix A.11, eqs. 86–89).

With order N (`hyena_order`) and projections x¹ … x^N, v of the input (each through a short causal convolution):

    z⁰ = v,   zⁿ = xⁿ ⊙ (lⁿ * z^{n−1} + bⁿ ⊙ z^{n−1})   for n = 1 … N,   y = W_o z^N     (eq. 87–89)

The long filters lⁿ are implicit (safari `HyenaFilter`): an FFN with sine activations over positional features
of the lag, times an exponential-decay window, lⁿ_l = exp(−|αⁿ| t_l) · FFN(pe(l)). The features are normalised
by the fixed `max_position_embeddings`, never by the input length, so the same lag always gets the same filter
value in training and in decoding; filters are generated only for the lags a forward needs.

Training: FFT long convolutions (eq. 88). Hyena has no recurrent form, so decoding caches, per order, the history
of the long convolution's input (B, T_seen, d) plus the short-conv windows, and computes each new output as one
dot product with the filter: O(T·d) per token, no reprocessing of the prefix. `state_size()` is therefore `None`.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from transformers import initialization as init

from .ops.fft_conv import causal_fft_conv
from .ops.mixing_maps import MixingMap, causal_key_mask, report_mixing_map
from .ops.padding import token_mask, zero_padding
from .ops.residual import residual_projection
from .ops.short_conv import CausalDepthwiseConv
from .registry import ConfigField, positive_int, register_mixer


class HyenaFilter(nn.Module):
    """Implicit long filter with exponential modulation (safari `HyenaFilter`, 2 inner layers, shared `Sin`).

    Args:
        channels (`int`): number of filters (d · N).
        width (`int`): FFN width (`hyena_filter_size`).
        max_length (`int`): lag normaliser of the positional features (fixed, not the input length).
        emb_dim (`int`): positional features: t plus (emb_dim − 1) / 2 complex-exponential bands (paper 1's code: 5).
        sin_freq (`float`): initial frequency w of the sine activations (paper 1's code: 10).
        fast_decay_pct, slow_decay_pct (`float`): the window decays to 1e-2 at these fractions of `max_length`,
            from the fastest to the slowest channel.
    """

    def __init__(self, channels, width, max_length, emb_dim=5, sin_freq=10.0, fast_decay_pct=0.3, slow_decay_pct=1.5):
        super().__init__()
        self.max_length, self.emb_dim, self.sin_freq = max_length, emb_dim, sin_freq
        self.decay_range = (math.log(1e-2) / slow_decay_pct, math.log(1e-2) / fast_decay_pct)
        self.freq = nn.Parameter(torch.empty(width))  # Sin(freq · x), shared by the three activations
        self.layers = nn.ModuleList([nn.Linear(emb_dim, width), nn.Linear(width, width), nn.Linear(width, width)])
        self.out = nn.Linear(width, channels, bias=False)
        self._cache = (None, None)  # (key, filter) of generated lags, reused while decoding
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self) -> None:
        init.constant_(self.freq, self.sin_freq)
        for linear in (*self.layers, self.out):  # PyTorch's default Linear init, as the reference keeps it
            init.kaiming_uniform_(linear.weight, a=math.sqrt(5))
            if linear.bias is not None:
                bound = 1 / math.sqrt(linear.in_features)
                init.uniform_(linear.bias, -bound, bound)

    reset_mixer_parameters = reset_parameters  # called by the skeleton's init (see `DiagonalSSM`)

    def forward(self, start: int, stop: int) -> torch.Tensor:
        """Filter values at lags start … stop − 1: (L, channels)."""
        lag = torch.arange(start, stop, device=self.freq.device, dtype=self.freq.dtype)[:, None]  # (L, 1)
        t = lag / (self.max_length - 1)
        bands = (self.emb_dim - 1) // 2
        f = torch.linspace(1e-4, bands - 1, bands, device=lag.device, dtype=lag.dtype)
        angle = f * (2 * math.pi * lag / self.max_length)  # (L, bands): pe = [t, Re, Im of exp(−i f w)]
        h = torch.cat([t, torch.cos(angle), -torch.sin(angle)], dim=-1)  # (L, emb_dim)
        for linear in self.layers:
            h = torch.sin(self.freq * linear(h))
        h = self.out(h)  # (L, channels)
        low, high = self.decay_range
        alpha = torch.linspace(low, high, h.shape[-1], device=h.device, dtype=h.dtype).abs()
        return h * torch.exp(-t * alpha)  # (L, channels)

    def lags(self, length: int) -> torch.Tensor:
        """Filter at lags 0 … length − 1; without autograd, generated entries are cached and only new ones added."""
        if torch.is_grad_enabled():
            return self(0, length)
        key = tuple((p.data_ptr(), p._version, p.dtype, p.device) for p in self.parameters())
        cached_key, cached = self._cache
        if cached_key != key:
            cached = self(0, 0)
        if cached.shape[0] < length:
            cached = torch.cat([cached, self(cached.shape[0], max(length, 2 * cached.shape[0]))])
        self._cache = (key, cached)
        return cached[:length]


HYENA_FIELDS = (
    ConfigField("hyena_order", 2, "order of the Hyena recurrence (number of long convolutions)", check=positive_int),
    ConfigField("hyena_filter_size", 64, "width of Hyena's implicit-filter MLP", check=positive_int),
)


@register_mixer("hyena", config_fields=HYENA_FIELDS)
class HyenaMixer(nn.Module):
    """Order-N Hyena operator: (N+1)·d projections, short convolutions, N gated implicit long convolutions.

    Args:
        config: an `ICLConfig` (uses hidden_size, hyena_order, hyena_filter_size, max_position_embeddings,
            use_bias).
        layer_idx (`int`): index of the layer, used to find this layer's state in the cache.
    """

    recurrent = False  # no recurrent form: decoding keeps the long convolutions' input histories
    returns_attention_maps = False
    mixing_maps = True  # per channel: diag(x^N)(T_N + b_N I) ⋯ diag(x¹)(T_1 + b_1 I), T_n Toeplitz in lⁿ
    map_axis = "channels"
    short_kernel = 3

    def __init__(self, config, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx
        self.width, self.order = config.hidden_size, config.hyena_order
        inner = (self.order + 1) * self.width
        self.in_proj = nn.Linear(self.width, inner, bias=config.use_bias)
        self.short_conv = CausalDepthwiseConv(inner, self.short_kernel, bias=True)
        self.filter = HyenaFilter(self.width * self.order, config.hyena_filter_size, config.max_position_embeddings)
        self.conv_skip = nn.Parameter(torch.empty(self.width, self.order))  # bⁿ: the long convolutions' skip term
        self.out_proj = residual_projection(nn.Linear(self.width, self.width, bias=config.use_bias))
        self.reset_mixer_parameters()

    @torch.no_grad()
    def reset_mixer_parameters(self) -> None:
        """Reference init: skip terms ~ N(0, 1), short convolutions with PyTorch's default `Conv1d` init."""
        init.normal_(self.conv_skip, 0.0, 1.0)
        conv = self.short_conv.conv
        init.kaiming_uniform_(conv.weight, a=math.sqrt(5))
        init.uniform_(conv.bias, -1 / math.sqrt(self.short_kernel), 1 / math.sqrt(self.short_kernel))

    def state_size(self) -> None:
        return None  # the cached long-convolution inputs grow with the sequence

    def mixing_map(self, hidden_states, mask=None) -> MixingMap:
        """Per channel c (Hyena §3.1, the data-controlled matrix): M = Π_n diag(xⁿ)(Tⁿ + bⁿ I) on v, before W_o."""
        batch, length, width = hidden_states.shape
        u = zero_padding(self.in_proj(hidden_states), mask)
        u = zero_padding(self.short_conv(u, None, name="short_window"), mask)
        *gates, v = u.split(width, dim=-1)  # each (B, T, d)
        filters = self.filter.lags(length).view(length, width, self.order)  # (T, d, N)
        lag = torch.arange(length, device=u.device)
        lag = lag[:, None] - lag[None]  # (T, T): t − j
        maps, z = None, v
        for n, gate in enumerate(gates):
            factor = filters[lag.clamp(min=0), :, n].permute(2, 0, 1) * (lag >= 0)  # (d, T, T): lⁿ_{t−j}
            factor = factor + torch.diag_embed(self.conv_skip[:, n, None].expand(-1, length))  # + bⁿ I
            factor = gate.transpose(1, 2)[..., None] * factor[None]  # (B, d, T, T): diag(xⁿ) (Tⁿ + bⁿ I)
            maps = factor if maps is None else factor @ maps
            conv = causal_fft_conv(z, filters[:, :, n])
            z = gate * (conv + self.conv_skip[:, n] * z)
        maps = maps * causal_key_mask(mask, length, u.device)
        return MixingMap(maps, v.transpose(1, 2)[..., None], z.transpose(1, 2)[..., None])

    def forward(
        self, hidden_states, attention_mask=None, cache=None, input_ids=None, position_ids=None, recorder=None, **kw
    ):
        batch, length, width = hidden_states.shape
        report_mixing_map(self, hidden_states, attention_mask, cache, recorder)
        mask = token_mask(attention_mask, length)
        state = cache.layer_state(self.layer_idx) if cache is not None else None
        u = zero_padding(self.in_proj(hidden_states), mask)  # (B, T, (N+1)d)
        u = zero_padding(self.short_conv(u, state, name="short_window"), mask)
        *gates, z = u.split(width, dim=-1)  # x¹ … x^N, v: each (B, T, d)
        past = state.get("history_0").shape[1] if state is not None and state.get("history_0") is not None else 0
        filters = self.filter.lags(past + length).view(past + length, width, self.order)  # (S, d, N)
        for n, gate in enumerate(gates):
            signal = z  # (B, T, d)
            if state is not None:
                if past:
                    signal = torch.cat([state.get(f"history_{n}"), z], dim=1)  # (B, S, d)
                state.set(f"history_{n}", signal)
            if past and length == 1:  # decoding: one dot product with the filter over the history
                conv = torch.einsum("bsd,sd->bd", signal, filters[:, :, n].flip(0))[:, None]  # (B, 1, d)
            else:
                conv = causal_fft_conv(signal, filters[:, :, n])[:, signal.shape[1] - length :]  # (B, T, d)
            z = gate * (conv + self.conv_skip[:, n] * z)  # zⁿ = xⁿ ⊙ (lⁿ * z^{n−1} + bⁿ z^{n−1})
        return self.out_proj(z)  # (B, T, d)
