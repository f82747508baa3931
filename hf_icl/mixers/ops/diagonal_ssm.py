"""Diagonal state-space model S4D (Gu et al., 2022, "On the parameterization and initialization of diagonal state
space models"; paper 1, Appendix A.9 eqs. 73–78).

Per channel c, a complex diagonal SSM with N/2 modes n (the other N/2 are their conjugates), B = 1 folded into C:

    Ā_n = exp(Δ A_n),   B̄_n = (exp(Δ A_n) − 1) / A_n                        (zero-order hold)
    h_t = Ā h_{t−1} + B̄ u_t,   y_t = 2 Re(Σ_n C_n h_{t,n}) + D u_t           (recurrent form, eq. 73–74)
    K_l = 2 Re(Σ_n C_n B̄_n Ā_n^l),   y = K * u + D u                        (convolutional form, eq. 75–76)

S4D-Lin initialisation: A_n = −1/2 + iπn, log Δ ~ U[log 1e-3, log 1e-1], C ~ CN(0, 1), D ~ N(0, 1).
Training uses the FFT convolution; decoding the recurrence. Continuing from a state h₀ over T > 1 new inputs adds
2 Re(Σ_n C_n Ā_n^{t+1} h₀) to output t, and the new state is Ā^T h₀ + Σ_j Ā^{T−1−j} B̄ u_j.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from transformers import initialization as init

from .fft_conv import causal_fft_conv


def _powers(dtA: torch.Tensor, length: int) -> torch.Tensor:
    """Ā^l = exp(ΔA·l) for l < length: (C, P, L) complex."""
    return torch.exp(dtA[..., None] * torch.arange(length, device=dtA.device))


def _kernel(CB: torch.Tensor, powers: torch.Tensor) -> torch.Tensor:
    """K_l = 2 Re(Σ_n C_n B̄_n Ā_n^l): (L, C) real."""
    return 2 * torch.einsum("cp,cpl->lc", CB, powers).real


class DiagonalSSM(nn.Module):
    """`channels` independent S4D SSMs; trailing input dims after the channel dim share their channel's SSM.

    Args:
        channels (`int`): number of SSMs C.
        state_size (`int`): state size N ≥ 2 per channel (N/2 complex conjugate pairs are stored).
        dt_min (`float`), dt_max (`float`): range of the log-uniform initialisation of Δ.
    """

    def __init__(self, channels: int, state_size: int, dt_min: float = 1e-3, dt_max: float = 1e-1):
        super().__init__()
        if state_size < 2:
            raise ValueError(f"state_size={state_size} must be ≥ 2 (one complex conjugate pair)")
        self.channels, self.state_size = channels, state_size
        self.dt_min, self.dt_max = dt_min, dt_max
        pairs = state_size // 2
        self.log_dt = nn.Parameter(torch.empty(channels))
        self.log_A_real = nn.Parameter(torch.empty(channels, pairs))
        self.A_imag = nn.Parameter(torch.empty(channels, pairs))
        self.C = nn.Parameter(torch.empty(channels, pairs, 2))  # real view of the complex C
        self.D = nn.Parameter(torch.empty(channels))
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """S4D-Lin initialisation (called again by the owning mixer after the model's generic init).

        Uses `transformers.initialization`, which skips tensors already loaded by `from_pretrained`.
        """
        init.uniform_(self.log_dt, math.log(self.dt_min), math.log(self.dt_max))
        init.constant_(self.log_A_real, math.log(0.5))
        init.copy_(self.A_imag, math.pi * torch.arange(self.A_imag.shape[1]).expand_as(self.A_imag))
        init.normal_(self.C, 0.0, math.sqrt(0.5))  # complex C ~ CN(0, 1)
        init.normal_(self.D, 0.0, 1.0)

    # The skeleton's `_init_weights` calls `reset_mixer_parameters` on every module that defines it. transformers
    # skips modules without parameters of their own in custom-code models, so the hook lives here, on the owner.
    reset_mixer_parameters = reset_parameters

    def state_bytes(self, copies: int = 1) -> int:
        """Bytes of state per sequence (fp32 complex), times `copies` inputs sharing each channel's SSM."""
        return self.channels * copies * (self.state_size // 2) * 2 * 4

    def discretize(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """ZOH: (ΔA, Ā, B̄), each complex (C, N/2)."""
        A = torch.complex(-torch.exp(self.log_A_real), self.A_imag)  # (C, P)
        dtA = A * torch.exp(self.log_dt)[:, None]
        A_bar = torch.exp(dtA)
        return dtA, A_bar, (A_bar - 1) / A

    def kernel(self, length: int) -> torch.Tensor:
        """The convolution kernel K (L, C) of eq. 75."""
        dtA, _, B_bar = self.discretize()
        return _kernel(torch.view_as_complex(self.C) * B_bar, _powers(dtA, length))

    def toeplitz_lags(self, length: int) -> torch.Tensor:
        """The map of `forward` from a zero state by lag, (C, T): entry l is K_l, plus D at lag 0."""
        lags = self.kernel(length).t()  # (C, L)
        return torch.cat([lags[:, :1] + self.D[:, None], lags[:, 1:]], dim=1)

    def toeplitz_map(self, length: int) -> torch.Tensor:
        """The exact map (C, T, T) of `forward` from a zero state: M_tj = K_{t−j} (j ≤ t) plus D on the diagonal."""
        lags = self.toeplitz_lags(length)  # (C, T)
        lag = torch.arange(length, device=lags.device)
        lag = lag[:, None] - lag[None]  # (T, T): t − j
        return lags[:, lag.clamp(min=0)] * (lag >= 0)  # (C, T, T)

    def forward(self, u: torch.Tensor, state=None, prefix: str = "ssm") -> torch.Tensor:
        """Apply the SSMs to `u` (B, T, C, *E); with a `MixerState`, continue from / store its entry `prefix`.

        Callers zero `u` at padded positions: the system is time-invariant, so a left-padded row equals the
        unpadded one and its state is the same.
        """
        batch, length = u.shape[:2]
        x = u.reshape(batch, length, self.channels, -1)  # (B, T, C, E)
        x = x.to(torch.promote_types(u.dtype, self.log_dt.dtype))
        prev = state.get(prefix) if state is not None else None
        if prev is not None:
            prev = torch.view_as_complex(prev.reshape(batch, self.channels, x.shape[3], -1, 2).contiguous())
        dtA, A_bar, B_bar = self.discretize()
        C = torch.view_as_complex(self.C)  # (C, P)
        skip = self.D[:, None] * x  # (B, T, C, E)
        if prev is not None and length == 1:  # recurrent step, O(C·N)
            h = A_bar[:, None] * prev + B_bar[:, None] * x[:, 0, ..., None]  # (B, C, E, P)
            y = 2 * (h * C[:, None]).sum(-1).real[:, None] + skip  # (B, 1, C, E)
        else:
            powers = _powers(dtA, length + 1)  # (C, P, T+1): Ā^0 … Ā^T
            y = causal_fft_conv(x, _kernel(C * B_bar, powers[..., :length])[:, :, None]) + skip  # (B, T, C, E)
            if prev is not None:  # + 2 Re(Σ_n C_n Ā_n^{t+1} h₀)
                G = C[..., None] * powers[..., 1:]  # (C, P, T)
                y = y + 2 * torch.einsum("bcep,cpt->btce", prev.real, G.real)
                y = y - 2 * torch.einsum("bcep,cpt->btce", prev.imag, G.imag)
            h = None
            if state is not None:  # h_T = Ā^T h₀ + Σ_j Ā^{T−1−j} B̄ u_j
                rev = powers[..., :length].flip(-1) * B_bar[..., None]  # (C, P, T)
                h = torch.complex(
                    torch.einsum("btce,cpt->bcep", x, rev.real), torch.einsum("btce,cpt->bcep", x, rev.imag)
                )
                if prev is not None:
                    h = h + powers[None, :, None, :, length] * prev
        if state is not None:
            state.set(prefix, torch.view_as_real(h).reshape(batch, self.channels, *u.shape[3:], -1, 2))
        return y.reshape(u.shape).to(u.dtype)
