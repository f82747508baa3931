"""Mamba (Gu & Dao, 2023, §3.4 and Alg. 2; paper 1, Appendix A.12, eqs. 90–92) and S4-Mamba (paper 5, §3.1).

The mixer is a gated (GAU-style, paper 1 eq. 17) block around a state-space model, as in `mamba_simple.Mamba`:

    x, z = W_in h                              (in_proj: d → 2·d_inner, d_inner = expand·d)
    x = SiLU(conv1d(x))                        (causal depthwise conv of width `conv_kernel`)
    y = SSM(x)                                 (S6 below, or input-independent S4D for `s4_mamba`)
    out = W_out (y ⊙ SiLU(z))

S6 (selective SSM): (δ, B_t, C_t) = x_proj(x_t) with δ of rank `dt_rank`; Δ_t = softplus(dt_proj(δ)) per channel;
A = −exp(A_log) with the S4D-real init A_log = log(1..N); then the selective scan of `ops/selective_scan.py`
(h_t = exp(Δ_t A) ⊙ h_{t−1} + Δ_t x_t B_t, y_t = h_t C_t) plus the skip D ⊙ x_t, D initialised to 1. The scan
dispatches on its own: mamba-ssm's kernel on CUDA, on the CPU a compiled numba kernel when numba is installed and the
chunked torch scan otherwise (`HF_ICL_SCAN_BACKEND=auto|numba|torch` forces one; see `selective_scan`). Δ is initialised
log-uniform in [1e-3, 1e-1] through dt_proj's bias (inverse softplus), dt_proj's weight uniform in ±dt_rank^−½, the
convolution with PyTorch's default `Conv1d` init; in_proj/out_proj have no biases (all as the reference).

S4-Mamba replaces S6 by the diagonal S4D SSM of `ops/diagonal_ssm.py` (its own D skip included), keeping the
convolution and the gate (paper 5 §3.1; its reference code multiplies by z itself, we keep Mamba's SiLU(z) gate so
that the two differ only in the SSM).

Padding: x is zeroed before the convolution and after it, and Δ is zeroed at padded positions, so a padded position
neither writes into nor decays the state (exp(0·A) = 1). The cache holds the convolution window and the SSM state
(B, d_inner, N); a decoding step is O(d_inner·N).
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F
from transformers import initialization as init

from .ops.diagonal_ssm import DiagonalSSM
from .ops.mixing_maps import MixingMap, causal_key_mask, report_mixing_map
from .ops.padding import token_mask, zero_padding
from .ops.residual import residual_projection
from .ops.selective_scan import selective_scan, selective_state_update
from .ops.short_conv import CausalDepthwiseConv
from .registry import ConfigField, positive_int, register_mixer
from .shared_fields import CONV_KERNEL, SCAN_CHUNK_SIZE, SSM_STATE_SIZE


class SelectiveSSM(nn.Module):
    """S6: input-dependent Δ, B, C over `channels` diagonal SSMs of size `state_size`, plus the D skip.

    Args:
        channels (`int`): d_inner, the number of channels.
        state_size (`int`): N.
        dt_rank (`int`): rank of the Δ projection.
        chunk_size (`int`): chunk length of the CPU scan.
        dt_min (`float`), dt_max (`float`): range of the log-uniform initialisation of Δ.
    """

    def __init__(self, channels, state_size, dt_rank, chunk_size, dt_min: float = 1e-3, dt_max: float = 1e-1):
        super().__init__()
        self.state_size, self.dt_rank, self.chunk_size = state_size, dt_rank, chunk_size
        self.dt_min, self.dt_max = dt_min, dt_max
        self.x_proj = nn.Linear(channels, dt_rank + 2 * state_size, bias=False)
        self.dt_proj = nn.Linear(dt_rank, channels, bias=True)
        self.A_log = nn.Parameter(torch.empty(channels, state_size))
        self.D = nn.Parameter(torch.empty(channels))

    @torch.no_grad()
    def reset_mixer_parameters(self) -> None:
        """Reference Mamba init; `transformers.initialization` skips tensors loaded by `from_pretrained`."""
        channels = self.D.shape[0]
        init.copy_(self.A_log, torch.log(torch.arange(1, self.state_size + 1.0)).expand(channels, -1))
        init.ones_(self.D)
        init.uniform_(self.dt_proj.weight, -(self.dt_rank**-0.5), self.dt_rank**-0.5)
        log_dt = torch.rand(channels) * (math.log(self.dt_max) - math.log(self.dt_min)) + math.log(self.dt_min)
        dt = torch.exp(log_dt).clamp(min=1e-4)
        init.copy_(self.dt_proj.bias, dt + torch.log(-torch.expm1(-dt)))  # softplus⁻¹(dt)

    def state_bytes(self) -> int:
        return self.A_log.numel() * 4

    def selective_map(self, x, mask=None, chunk: int = 16) -> torch.Tensor:
        """The exact map (B, d_inner, T, T) of S6 + D from a zero state, per channel d (Mamba's "attention"):

            M^d_tj = Σ_n C_t[n] B_j[n] exp(A[d, n] (Δcum_t[d] − Δcum_j[d])) Δ_j[d]   (j ≤ t),   M^d_tt += D[d]

        Δcum are float64 prefix sums, so every exponent is a difference ≤ 0. Chunked like the SSD form: blocks of
        `chunk` query rows t; within a block the terms are summed directly, and for keys j before the block's first
        position c the decay splits at c into exp(A (Δcum_t − Δcum_{c−1})) · exp(A (Δcum_{c−1} − Δcum_j)), two
        factors ≤ 1, so those T × c entries are one batched matmul over n instead of T · c · N exponentials.
        """
        delta, B, C = self.x_proj(x).split([self.dt_rank, self.state_size, self.state_size], dim=-1)
        delta = zero_padding(F.softplus(self.dt_proj(delta)), mask).float()  # (B, T, D)
        A = -torch.exp(self.A_log.float())  # (D, N)
        B, C = B.float(), C.float()  # (B, T, N)
        cum = delta.double().cumsum(1)  # (B, T, D)
        batch, length, channels = delta.shape
        maps = delta.new_zeros(batch, channels, length, length)
        for start in range(0, length, chunk):
            end = min(start + chunk, length)
            # the block's own keys: (B, L, L, D) gaps t − j, each term decayed directly (upper triangle masked)
            gap = (cum[:, start:end, None] - cum[:, None, start:end]).float()
            causal = torch.ones(end - start, end - start, dtype=torch.bool, device=x.device).tril()[None, :, :, None]
            decay = (gap[..., None] * A).masked_fill(~causal[..., None], float("-inf")).exp()  # (B, L, L, D, N)
            block = torch.einsum("btn,btjdn,bjn->bdtj", C[:, start:end], decay, B[:, start:end])
            maps[:, :, start:end, start:end] = block * delta[:, start:end].transpose(1, 2)[:, :, None, :]
            if start == 0:
                continue
            # earlier keys j < c = start: both factors of the split decay are ≤ 1
            boundary = cum[:, start - 1 : start]  # (B, 1, D)
            rise = ((cum[:, start:end] - boundary).float()[..., None] * A).exp()  # (B, L, D, N), t after c − 1
            fall = ((boundary - cum[:, :start]).float()[..., None] * A).exp()  # (B, c, D, N), j up to c − 1
            left = C[:, start:end, None, :] * rise  # (B, L, D, N)
            right = B[:, :start, None, :] * fall * delta[:, :start, :, None]  # (B, c, D, N)
            maps[:, :, start:end, :start] = left.permute(0, 2, 1, 3) @ right.permute(0, 2, 3, 1)  # (B, D, L, c)
        allowed = causal_key_mask(mask, length, x.device)  # (B|1, 1, T, T)
        real = allowed[:, 0].diagonal(dim1=-2, dim2=-1)  # (B|1, T)
        return maps * allowed + torch.diag_embed(self.D[None, :, None] * real[:, None])  # + D on the diagonal

    def forward(self, x, state=None, mask=None, gate=None):
        """Apply S6 to `x` (B, T, d_inner); with a `MixerState`, continue from and update its `ssm_state`; with a
        `gate` z (B, T, d_inner), return the output ⊙ SiLU(z)."""
        delta, B, C = self.x_proj(x).split([self.dt_rank, self.state_size, self.state_size], dim=-1)
        delta = self.dt_proj(delta)  # (B, T, d_inner): Δ before its softplus
        if mask is not None:  # softplus(−∞) = 0: a padded step leaves the state as it is
            delta = delta.masked_fill(~mask.bool()[..., None], float("-inf"))
        A = -torch.exp(self.A_log.float())  # (d_inner, N)
        prev = state.get("ssm_state") if state is not None else None  # (B, d_inner, N)
        if prev is not None and x.shape[1] == 1:
            y, h = selective_state_update(prev, x[:, 0], F.softplus(delta[:, 0]), A, B[:, 0], C[:, 0])
            y = y[:, None] + x * self.D  # (B, 1, d_inner)
            y = y if gate is None else y * F.silu(gate)
        else:  # the softplus, the D skip and the gate are fused into the scan where a kernel runs it
            options = dict(initial_state=prev, chunk_size=self.chunk_size, D=self.D, delta_softplus=True, z=gate)
            y, h = selective_scan(x, delta, A, B, C, **options)  # (B, T, d_inner)
        if state is not None:
            state.set("ssm_state", h)
        return y  # (B, T, d_inner)


MAMBA_FIELDS = (
    SSM_STATE_SIZE,
    CONV_KERNEL,
    ConfigField("expand", 2, "inner width multiplier of the GAU block (d_inner = expand · d)", check=positive_int),
    ConfigField("dt_rank", None, "rank of Δ's projection; None: ⌈d / 16⌉", type=int, check=positive_int,
                derive=lambda config: math.ceil(config.hidden_size / 16)),
    SCAN_CHUNK_SIZE,
)  # fmt: skip


@register_mixer("mamba", config_fields=MAMBA_FIELDS)
class MambaMixer(nn.Module):
    """Mamba-1 mixer: in_proj → causal conv → SiLU → S6 → ⊙ SiLU(z) → out_proj (no biases, as in the reference).

    Args:
        config: an `ICLConfig` (uses hidden_size, expand, conv_kernel, ssm_state_size, dt_rank, scan_chunk_size).
        layer_idx (`int`): index of the layer, used to find this layer's state in the cache.
    """

    recurrent = True  # convolution window + SSM state
    returns_attention_maps = False
    mixing_maps = True  # one (T, T) map per channel of d_inner: the SSM + D skip on the conv's output
    map_axis = "inner channels"

    def __init__(self, config, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx
        inner = config.expand * config.hidden_size
        self.flop_dims = (config.hidden_size, config.expand, config.ssm_state_size, config.dt_rank)  # D, E, N, R
        self.in_proj = nn.Linear(config.hidden_size, 2 * inner, bias=False)
        self.conv = CausalDepthwiseConv(inner, config.conv_kernel)
        self.ssm = self.build_ssm(config, inner)
        self.out_proj = residual_projection(nn.Linear(inner, config.hidden_size, bias=False))

    @torch.no_grad()
    def reset_mixer_parameters(self) -> None:
        """PyTorch's default `Conv1d` init (as in the reference Mamba) instead of the skeleton's normal(0, 0.02)."""
        conv = self.conv.conv
        init.kaiming_uniform_(conv.weight, a=math.sqrt(5))
        init.uniform_(conv.bias, -(conv.kernel_size[0] ** -0.5), conv.kernel_size[0] ** -0.5)

    def build_ssm(self, config, channels: int) -> nn.Module:
        return SelectiveSSM(channels, config.ssm_state_size, config.dt_rank, config.scan_chunk_size)

    def run_ssm(self, x, state, mask, gate=None):
        """The SSM on x (B, T, d_inner), its output ⊙ SiLU(gate) where a gate is given (fused into the scan)."""
        return self.ssm(x, state, mask, gate=gate)

    def state_size(self) -> int:
        return self.conv.state_bytes() + self.ssm.state_bytes()

    def multiplications(self, length: int) -> int:
        """P5 Table 8: 2LED² (input projection) + 7LEDN + 2RLED (SSM) + LED² (output projection)."""
        d, e, n, r = self.flop_dims
        return 3 * length * e * d * d + 7 * length * e * d * n + 2 * r * length * e * d

    def ssm_map(self, x, mask):
        return self.ssm.selective_map(x, mask)

    def mixing_map(self, hidden_states, mask=None) -> MixingMap:
        """Per channel: the SSM's map (with its D skip) on its input x (after the conv), before the SiLU(z) gate."""
        x = F.linear(hidden_states, self.in_proj.weight.chunk(2)[0])
        x = zero_padding(F.silu(self.conv(zero_padding(x, mask), None)), mask)  # (B, T, d_inner)
        y = self.run_ssm(x, None, mask)
        values, output = (t.transpose(1, 2)[..., None] for t in (x, y))  # (B, d_inner, T, 1)
        return MixingMap(self.ssm_map(x, mask), values, output)

    def forward(
        self, hidden_states, attention_mask=None, cache=None, input_ids=None, position_ids=None, recorder=None, **kw
    ):
        mask = token_mask(attention_mask, hidden_states.shape[1])  # (B, T) or None
        report_mixing_map(self, hidden_states, attention_mask, cache, recorder)
        state = cache.layer_state(self.layer_idx) if cache is not None else None
        # two matmuls with contiguous outputs: slices of one (B, T, 2·d_inner) output make every later op strided
        x, z = (F.linear(hidden_states, weight) for weight in self.in_proj.weight.chunk(2))  # (B, T, d_inner) each
        x = zero_padding(F.silu(self.conv(zero_padding(x, mask), state)), mask)
        y = self.run_ssm(x, state, mask, gate=z)  # (B, T, d_inner): S6(x) ⊙ SiLU(z)
        return self.out_proj(y)  # (B, T, d)


@register_mixer("s4_mamba", config_fields=MAMBA_FIELDS)
class S4MambaMixer(MambaMixer):
    """S4-Mamba (paper 5 §3.1): the Mamba mixer with S6 replaced by input-independent S4D (`DiagonalSSM`).

    Args:
        config: as `MambaMixer` (dt_rank and scan_chunk_size unused).
        layer_idx (`int`): index of the layer.
    """

    def build_ssm(self, config, channels: int) -> nn.Module:
        return DiagonalSSM(channels, config.ssm_state_size)

    def run_ssm(self, x, state, mask, gate=None):
        y = self.ssm(x, state)  # time-invariant: zeroed inputs at pads are enough (see DiagonalSSM)
        return y if gate is None else y * F.silu(gate)

    def ssm_map(self, x, mask):
        maps = self.ssm.toeplitz_map(x.shape[1])[None] * causal_key_mask(mask, x.shape[1], x.device)
        return maps.expand(x.shape[0], -1, -1, -1)  # (B, d_inner, T, T)
