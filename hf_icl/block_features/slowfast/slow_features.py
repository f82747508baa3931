"""Slow-feature regularisers, augmentations and the auxiliary truncated batch (P3 §3.2–3.5, App. B; DESIGN §5.7).

With n_s = y_s / ‖y_s‖ (y of one sequence at position s; α, β index the batch):

    R_C  = mean over sequences and s ≥ 1 of ‖n_s − n_{s−1}‖²                                   (§3.2)
    R_D  = mean over s of Σ_{α,β} (n_s^(α) · n_s^(β) − δ_αβ)² / B²                              (§3.2)
    R'_D = mean over s of ‖⟨y_s⟩‖² + Σ_{i,j} (⟨Δy_{s,i} Δy_{s,j}⟩ − δ_ij)²,  Δy = y − ⟨y⟩         (App. B)
    KL   = KL(N(μ_c, diag σ_c²) ‖ N(0, 𝒦)) per channel c,  𝒦_ij = K²(ν δ_ij + (1 − ν) e^{−(i−j)²/2σ_len²})
         = ½ [tr(𝒦⁻¹ diag σ²) + μᵀ𝒦⁻¹μ − n + log|𝒦| − Σ_i log σ_i²]                              (§3.3)

Means rather than sums keep w_C, w_D at the paper's scale across lengths and batch sizes (DESIGN §5.7.6); the KL is
reported per position and channel (averaged over channels and the batch, divided by n), σ_len is a fraction of n.
The paper's printed KL drops factors; this is the standard Gaussian formula (DESIGN §5.7.7).
"""

from __future__ import annotations

import math

import torch


def _normalised(y: torch.Tensor) -> torch.Tensor:
    return y / y.norm(dim=-1, keepdim=True).clamp(min=1e-6)


def slow_change(y: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """R_C: mean of ‖n_s − n_{s−1}‖² over consecutive real positions of every sequence.

    Args:
        y: (B, T, d_y).
        mask: (B, T), 1 at real positions (`None`: all real).
    """
    n = _normalised(y)
    steps = (n[:, 1:] - n[:, :-1]).pow(2).sum(-1)  # (B, T−1)
    if mask is None:
        return steps.mean()
    pairs = (mask[:, 1:] * mask[:, :-1]).to(steps.dtype)
    return (steps * pairs).sum() / pairs.sum().clamp(min=1)


def slow_orthogonality(y: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """R_D: mean over positions of Σ_{α,β} (n_s^(α)·n_s^(β) − δ_αβ)² / B² (only rows real at s take part).

    Args:
        y: (B, T, d_y).
        mask: (B, T), 1 at real positions (`None`: all real).
    """
    n = _normalised(y).transpose(0, 1)  # (T, B, d_y)
    gram = n @ n.transpose(1, 2)  # (T, B, B)
    eye = torch.eye(gram.shape[-1], dtype=gram.dtype, device=gram.device)
    errors = (gram - eye).pow(2)  # (T, B, B)
    if mask is None:
        return errors.mean()
    m = mask.to(gram.dtype).transpose(0, 1)  # (T, B)
    pairs = m[:, :, None] * m[:, None, :]  # (T, B, B)
    per_position = (errors * pairs).sum((1, 2)) / pairs.sum((1, 2)).clamp(min=1)
    return per_position[m.sum(1) > 0].mean()


def slow_statistics(y: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """R'_D: mean over positions of ‖⟨y_s⟩‖² + Σ_{i,j} (⟨Δy_{s,i} Δy_{s,j}⟩ − δ_ij)², ⟨·⟩ over the batch.

    Args:
        y: (B, T, d_y).
        mask: (B, T), 1 at real positions (`None`: all real).
    """
    m = torch.ones(y.shape[:2], dtype=y.dtype, device=y.device) if mask is None else mask.to(y.dtype)
    m = m.transpose(0, 1)[..., None]  # (T, B, 1)
    count = m.sum(1, keepdim=True).clamp(min=1)  # (T, 1, 1)
    yt = y.transpose(0, 1)  # (T, B, d_y)
    mean = (yt * m).sum(1, keepdim=True) / count  # (T, 1, d_y)
    centred = (yt - mean) * m
    covariance = centred.transpose(1, 2) @ centred / count  # (T, d_y, d_y)
    eye = torch.eye(y.shape[-1], dtype=y.dtype, device=y.device)
    per_position = mean.squeeze(1).pow(2).sum(-1) + (covariance - eye).pow(2).sum((1, 2))  # (T,)
    return per_position[m.sum((1, 2)) > 0].mean()


def gp_prior_covariance(length: int, noise: float, length_scale: float, scale: float, device=None, dtype=None):
    """𝒦 = K²(ν I + (1 − ν) RBF) over positions 0 … n − 1, with σ_len = `length_scale` · n.

    Args:
        length: n.
        noise: ν.
        length_scale: σ_len as a fraction of n.
        scale: K.

    Returns:
        (n, n).
    """
    positions = torch.arange(length, device=device, dtype=torch.float64)
    sigma = length_scale * length
    rbf = torch.exp(-((positions[:, None] - positions[None, :]) ** 2) / (2 * sigma**2))
    covariance = scale**2 * (noise * torch.eye(length, dtype=torch.float64, device=device) + (1 - noise) * rbf)
    return covariance.to(dtype or torch.get_default_dtype())


def gp_kl(mean: torch.Tensor, log_variance: torch.Tensor, noise: float, length_scale: float, scale: float):
    """KL(N(μ, diag σ²) ‖ N(0, 𝒦)) per channel along the sequence, averaged over channels and the batch, / n.

    Args:
        mean: μ, (B, T, d_y).
        log_variance: log σ², (B, T, d_y).
        noise, length_scale, scale: ν, σ_len (fraction of T), K of the prior kernel.

    Returns:
        A scalar: nats per position and channel.
    """
    batch, length, channels = mean.shape
    covariance = gp_prior_covariance(length, noise, length_scale, scale, mean.device, torch.float64)
    cholesky = torch.linalg.cholesky(covariance)  # (T, T)
    inverse = torch.cholesky_inverse(cholesky).to(mean.dtype)
    log_det = (2 * cholesky.diagonal().log().sum()).to(mean.dtype)
    mu = mean.transpose(1, 2)  # (B, d_y, T)
    quadratic = ((mu @ inverse) * mu).sum(-1)  # (B, d_y): μᵀ𝒦⁻¹μ
    trace = (log_variance.exp().transpose(1, 2) * inverse.diagonal()).sum(-1)  # (B, d_y): tr(𝒦⁻¹ diag σ²)
    log_det_posterior = log_variance.sum(1)  # (B, d_y)
    kl = 0.5 * (trace + quadratic - length + log_det - log_det_posterior)  # (B, d_y)
    return kl.mean() / length


def smooth(y: torch.Tensor, windows: torch.Tensor) -> torch.Tensor:
    """Causal box smoothing: ỹ_t = mean(y_{t−w+1} … y_t) with a window w per sequence (shorter at the start).

    Args:
        y: (B, T, d_y).
        windows: (B,) integers ≥ 1.
    """
    length = y.shape[1]
    padded = torch.cat([torch.zeros_like(y[:, :1]), y.cumsum(1)], dim=1)  # (B, T+1, d_y): prefix sums
    ends = torch.arange(1, length + 1, device=y.device)[None]  # (1, T)
    starts = (ends - windows[:, None]).clamp(min=0)  # (B, T)
    gather = lambda index: padded.gather(1, index[..., None].expand(-1, -1, y.shape[-1]))  # noqa: E731
    return (gather(ends.expand_as(starts)) - gather(starts)) / (ends - starts)[..., None].to(y.dtype)


def shift(y: torch.Tensor, delays: torch.Tensor) -> torch.Tensor:
    """Delay y causally: ỹ_t = y_{max(t − s, 0)} with a delay s per sequence.

    Args:
        y: (B, T, d_y).
        delays: (B,) integers ≥ 0.
    """
    index = (torch.arange(y.shape[1], device=y.device)[None] - delays[:, None]).clamp(min=0)  # (B, T)
    return y.gather(1, index[..., None].expand(-1, -1, y.shape[-1]))


def augment(y: torch.Tensor, max_window: int, max_delay: int) -> torch.Tensor:
    """P3 §3.5's random y augmentations: smoothing over w ~ U{1 … max_window}, then a delay s ~ U{0 … max_delay}.

    Draws from torch's global generator, one w and one s per sequence; `max_window` ≤ 1 and `max_delay` = 0 are off.
    """
    batch = y.shape[0]
    if max_window > 1:
        y = smooth(y, torch.randint(1, max_window + 1, (batch,), device=y.device))
    if max_delay > 0:
        y = shift(y, torch.randint(0, max_delay + 1, (batch,), device=y.device))
    return y


def moving_average(y: torch.Tensor, initial: torch.Tensor, rate: float) -> torch.Tensor:
    """The "informed" y of P3 Fig. 13: u_t = (1 − γ) u_{t−1} + γ y_t from u_{−1} = `initial`, for every position.

    Args:
        y: computed y^ℓ, (B, T, d_y).
        initial: (B|1, d_y), the value before the first position.
        rate: γ in [0, 1] (0: `initial` throughout, the frozen y; 1: y itself).

    Returns:
        (B, T, d_y).
    """
    length = y.shape[1]
    t = torch.arange(length, device=y.device, dtype=torch.float64)
    lag = t[:, None] - t[None, :]  # (T, T)
    keep = math.log1p(-rate) if rate < 1 else -math.inf
    power = torch.where(lag > 0, lag * keep, 0.0)  # log (1 − γ)^{lag}; 0 at lag 0 (no 0 · −inf at γ = 1)
    weights = torch.where(lag >= 0, rate * torch.exp(power), torch.zeros((), dtype=torch.float64))
    carry = torch.exp((t + 1) * keep)  # (T,) (1 − γ)^{t+1}
    weights, carry = weights.to(y.dtype), carry.to(y.dtype)
    return weights @ y + carry[None, :, None] * initial[:, None, :]


def truncated_batch(
    input_ids: torch.Tensor,
    labels: torch.Tensor,
    slow: torch.Tensor,
    starts: torch.Tensor,
    context: int,
    hold: str = "none",
    window: int | None = None,
    pad_token_id: int = 0,
):
    """The auxiliary loss's inputs (P3 §3.5, Fig. 2): every row truncated at its l_trunc, ȳ from the full pass.

    Row b keeps positions l_trunc(b) + k for k = 0 … T' − 1 (T' = T − min l_trunc, or l_Δ + l_ω with a window);
    labels before k = l_Δ are masked, so the loss covers exactly the tokens after l_trunc + l_Δ (with at least l_Δ
    tokens of local context). ȳ_k is y^ℓ at l_trunc + k (`hold="none"`), at l_trunc for every k (`"truncation"`), or
    at l_trunc + min(k, l_Δ − 1) (`"context"`, held once the local context is read).

    Args:
        input_ids, labels: (B, T); labels −100 where there is no loss.
        slow: y^ℓ of the full pass, (B, T, d_y).
        starts: l_trunc per row, (B,).
        context: l_Δ.
        hold: `none`, `truncation` or `context`.
        window: l_ω, or `None` for the rest of the sequence.
        pad_token_id: the id written past the end of a row.

    Returns:
        `(input_ids, labels, slow)` of the truncated batch: (B, T'), (B, T'), (B, T', d_y).
    """
    length = input_ids.shape[1]
    kept = length - int(starts.min()) if window is None else min(context + window, length)
    k = torch.arange(kept, device=input_ids.device)[None]  # (1, T')
    index = starts[:, None] + k  # (B, T')
    inside = index < length
    index = index.clamp(max=length - 1)
    ids = input_ids.gather(1, index).masked_fill(~inside, pad_token_id)
    targets = labels.gather(1, index).masked_fill(~inside | (k < context), -100)
    if hold == "truncation":
        source = starts[:, None].expand_as(index)
    elif hold == "context":
        source = (starts[:, None] + k.clamp(max=max(context - 1, 0))).clamp(max=length - 1)
    else:
        source = index
    held = slow.gather(1, source[..., None].expand(-1, -1, slow.shape[-1]))  # (B, T', d_y)
    return ids, targets, held
