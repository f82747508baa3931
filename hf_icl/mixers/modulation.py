"""Low-rank modulation of the fast stream by slow features (P3, Learning Fast and Slow, §3.4; DESIGN §5.7.1–3).

    T(x; y) = x + δŴ(y) x,   δŴ(y) = L̂(y) R̂(y)ᵀ,   L̂, R̂ ∈ ℝ^{d_x × r}
    L̂(y) = Σ_m L̂^(m) σ_m(y),   R̂(y) = Σ_m R̂^(m) σ_m(y),   σ(y) = tanh(S y) or softmax(S y)

M generator pairs (L̂^(m), R̂^(m)) share the weights σ(S y). T is applied as two thin products,
R̂ᵀx ∈ ℝ^r and then L̂ (R̂ᵀ x), never by forming the d_x × d_x matrix. For a frozen y, T is the linear map
I + L̂ R̂ᵀ, so a following linear layer W folds it exactly: W T(x) = (W + W L̂ R̂ᵀ) x (`fold_into`).
L̂^(m) start at zero and R̂^(m) small, so T starts as the identity and both receive gradients (LoRA's scheme).
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import initialization as init


class LowRankModulation(nn.Module):
    """T(·; y) of one modulated sub-layer: M generator pairs of rank r, weighted by σ(S y).

    Args:
        fast_dim (`int`): d_x, the width of the modulated input.
        slow_dim (`int`): d_y, the width of y.
        rank (`int`): r.
        num_generators (`int`): M.
        activation (`str`): `tanh` or `softmax`.
        init_std (`float`): std of the R̂^(m) initialisation.
    """

    def __init__(self, fast_dim: int, slow_dim: int, rank: int, num_generators: int, activation: str, init_std: float):
        super().__init__()
        self.rank, self.num_generators, self.activation, self.init_std = rank, num_generators, activation, init_std
        self.selector = nn.Linear(slow_dim, num_generators)  # S
        self.left = nn.Parameter(torch.zeros(num_generators, fast_dim, rank))  # L̂^(m), (M, d_x, r)
        self.right = nn.Parameter(torch.zeros(num_generators, fast_dim, rank))  # R̂^(m), (M, d_x, r)

    def reset_mixer_parameters(self):
        init.zeros_(self.left)
        init.normal_(self.right, mean=0.0, std=self.init_std)

    def generator_weights(self, slow: torch.Tensor) -> torch.Tensor:
        """σ(S y): (..., M) from y (..., d_y)."""
        scores = self.selector(slow)
        return torch.tanh(scores) if self.activation == "tanh" else torch.softmax(scores, dim=-1)

    def factors(self, slow: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """L̂(y), R̂(y): each (..., d_x, r) from y (..., d_y)."""
        weights = self.generator_weights(slow)  # (..., M)
        left = torch.einsum("...m,mdr->...dr", weights, self.left)
        right = torch.einsum("...m,mdr->...dr", weights, self.right)
        return left, right

    def forward(self, x: torch.Tensor, slow: torch.Tensor | None) -> torch.Tensor:
        """T(x; y) = x + L̂(y) (R̂(y)ᵀ x).

        Args:
            x: (B, T, d_x) normalised fast activations.
            slow: y^ℓ as (B, T, d_y) (one y per position) or (B, 1, d_y) (one y per sequence); `None` returns x.

        Returns:
            (B, T, d_x).
        """
        if slow is None:
            return x
        weights = self.generator_weights(slow)[..., None]  # (B, T|1, M, 1)
        num, fast_dim, rank = self.left.shape
        # R̂(y)ᵀ x = Σ_m σ_m R̂^(m)ᵀ x: project on all M·r directions at once, then mix with σ.
        projected = (x @ self.right.transpose(0, 1).reshape(fast_dim, num * rank)).unflatten(-1, (num, rank))
        coefficients = (weights * projected).sum(dim=2, keepdim=True)  # (B, T, 1, r) = R̂(y)ᵀ x
        # L̂(y) c = Σ_m σ_m L̂^(m) c: one (M·r → d_x) product.
        mixed = (weights * coefficients).flatten(-2)  # (B, T, M·r)
        update = mixed @ self.left.transpose(1, 2).reshape(num * rank, fast_dim)  # (B, T, d_x)
        return x + update  # (B, T, d_x)

    @torch.no_grad()
    def fold_into(self, linear: nn.Linear, slow: torch.Tensor) -> None:
        """Replace `linear.weight` W by W (I + L̂ R̂ᵀ) for one frozen y (d_y,), so `linear(x)` = old `linear(T(x; y))`.

        Args:
            linear (`nn.Linear`): the layer that reads T's output (in_features = d_x).
            slow: y^ℓ, shape (d_y,).
        """
        left, right = self.factors(slow.to(linear.weight.dtype))  # (d_x, r) each
        linear.weight.add_((linear.weight @ left) @ right.T)  # (out, d_x)
