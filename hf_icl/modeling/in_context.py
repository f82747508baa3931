"""In-context regression on the shared decoder (paper 5 §3.1 eq. 2; Garg et al., 2022; DESIGN §5.5).

A prompt of N examples is one token sequence. Each example is a group of tokens, the input first:

    x₁, y₁, x₂, y₂, …, x_n, y_n, x_{n+1}, …, x_N          (the n ≤ N labelled examples, then bare queries)
    x₁, s₁, y₁, …                                          (chain-of-thought I/O: the intermediate step s_i)

Read-in: x_i and y_i share one `Linear(d_x, d)`, y_i zero-padded to d_x (a vector `y_token` may replace the padded
y, as the orthogonal outliers do). With chain-of-thought (`config.cot_dim = k`) x, s and y each get their own
read-in, as in the Dissecting-CoT reference. Read-out: ŷ_i = W_out h(x_i) + b_out at the x positions, so the
prediction for example i sees only x₁, y₁, …, x_{i−1}, y_{i−1}, x_i; with chain-of-thought ŝ_i is read at x_i and
ŷ_i at s_i. The loss is the mean squared error over the scored examples (for chain-of-thought, Σ_k over the step's
coordinates plus the squared error of y, as the reference computes it).

Streaming (`predict_streaming`) feeds the same tokens one at a time through the cache, so each architecture's
recurrent form (or KV cache) produces the predictions: it equals the parallel form.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F
from transformers.utils import ModelOutput


@dataclass
class InContextRegressionOutput(ModelOutput):
    """Output of the in-context path of `ICLForRegression` (`model(xs=..., ys=...)`).

    Args:
        loss (`torch.Tensor`, *optional*): mean squared error over the scored examples (when targets are known).
        predictions (`torch.Tensor`): (B, N) predictions at the x positions, or (B, N, d_y) when d_y > 1; with
            chain-of-thought, ŷ read at the s positions, (B, n).
        step_predictions (`torch.Tensor`, *optional*): chain-of-thought only: (B, N, k) ŝ read at the x positions.
        hidden_states, attentions, aux_losses: as in `ICLRegressionOutput`, over the interleaved token sequence.
        cache (`ICLCache`, *optional*): the cache, with `use_cache=True`.
    """

    loss: torch.Tensor | None = None
    predictions: torch.Tensor | None = None
    step_predictions: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor | None, ...] | None = None
    aux_losses: dict[str, torch.Tensor] | None = None
    cache: object | None = None


def interleave(x_tokens, y_tokens, s_tokens=None):
    """Token sequence x₁ (s₁) y₁ … x_n (s_n) y_n x_{n+1} … x_N, and where the x and s tokens sit in it.

    Args:
        x_tokens: (B, N, d) read-in x's.
        y_tokens: (B, n, d) read-in y's, n ≤ N.
        s_tokens: (B, n, d) read-in chain-of-thought steps, or `None`.

    Returns:
        `(tokens (B, T, d), x_positions (N,), s_positions (n,) or None)`.
    """
    batch, total, width = x_tokens.shape
    labelled = y_tokens.shape[1]
    parts = [x_tokens[:, :labelled], *([] if s_tokens is None else [s_tokens]), y_tokens]
    group = len(parts)
    paired = torch.stack(parts, dim=2).reshape(batch, labelled * group, width)  # (B, n·g, d)
    tokens = torch.cat([paired, x_tokens[:, labelled:]], dim=1)  # (B, n·g + N − n, d)
    device = x_tokens.device
    queries = labelled * group + torch.arange(total - labelled, device=device)  # bare x's after the pairs
    x_positions = torch.cat([torch.arange(labelled, device=device) * group, queries])
    s_positions = None if s_tokens is None else torch.arange(labelled, device=device) * group + 1
    return tokens, x_positions, s_positions


def check_tensor(name: str, value, ranks: tuple[int, ...], expected: str) -> None:
    """Raises `ValueError` naming `name` when `value` is no tensor, has another rank, or holds NaN or infinity."""
    if not torch.is_tensor(value):
        raise ValueError(f"{name} is a {type(value).__name__}: expected a tensor {expected}")
    if value.dim() not in ranks:
        raise ValueError(f"{name} has shape {tuple(value.shape)}: expected {expected}")
    if value.is_floating_point() and not torch.isfinite(value).all():
        raise ValueError(f"{name} holds NaN or infinite values: expected finite numbers")


def _squeeze_scalar(values: torch.Tensor) -> torch.Tensor:
    return values[..., 0] if values.shape[-1] == 1 else values


def masked_mse(predictions, targets, mask=None) -> torch.Tensor:
    """Mean of (ŷ − y)² over scored examples (and output coordinates).

    Args:
        predictions, targets: (B, N) or (B, N, d_y).
        mask: (B, N) bool or 0/1, `None` to score every example.
    """
    errors = (predictions - targets.to(predictions.dtype)) ** 2
    if errors.dim() == 2:
        errors = errors[..., None]
    if mask is None:
        return errors.mean()
    mask = mask.to(errors.dtype)[..., None]  # (B, N, 1)
    return (errors * mask).sum() / (mask.sum() * errors.shape[-1]).clamp(min=1)


class InContextRegressionMixin:
    """The in-context path of `ICLForRegression`: interleave, read in, run the backbone, read out at x positions.

    The host class owns `read_in`, `model` (the backbone) and `read_out`; `build_in_context_heads` adds the
    chain-of-thought read-ins and read-out when `config.cot_dim` is set.
    """

    def build_in_context_heads(self, config) -> None:
        self.read_in_steps = self.read_in_targets = self.read_out_steps = None
        if config.cot_dim is not None:
            self.read_in_steps = nn.Linear(config.cot_dim, config.hidden_size)
            self.read_in_targets = nn.Linear(config.output_dim, config.hidden_size)
            self.read_out_steps = nn.Linear(config.hidden_size, config.cot_dim)

    # --- checks -----------------------------------------------------------------------------------------------

    def check_examples(self, xs, ys=None) -> None:
        """The examples' ranks, sizes and values, before any of them is read in.

        Raises:
            ValueError: naming `xs` or `ys`, the shape or value found and what is expected: `xs` (B, N, input_dim)
                with N >= 1, `ys` (B, n) or (B, n, output_dim) with n <= N, every value finite.
        """
        expected_xs = f"(batch, N >= 1, input_dim={self.config.input_dim})"
        check_tensor("xs", xs, (3,), expected_xs)
        if xs.shape[1] < 1:
            raise ValueError(f"xs has shape {tuple(xs.shape)}: N=0 examples; expected {expected_xs}")
        if xs.shape[-1] != self.config.input_dim:
            raise ValueError(f"xs has width {xs.shape[-1]} but config.input_dim={self.config.input_dim}")
        if ys is None:
            return
        expected_ys = f"(batch={xs.shape[0]}, n <= {xs.shape[1]}) or (batch, n, output_dim={self.config.output_dim})"
        check_tensor("ys", ys, (2, 3), expected_ys)
        if ys.shape[0] != xs.shape[0] or (ys.dim() == 3 and ys.shape[-1] != self.config.output_dim):
            raise ValueError(f"ys has shape {tuple(ys.shape)}: expected {expected_ys}")
        if ys.shape[1] > xs.shape[1]:
            raise ValueError(f"ys has {ys.shape[1]} examples but xs only {xs.shape[1]}: every y needs its x")

    # --- read-ins ---------------------------------------------------------------------------------------------

    def _x_tokens(self, xs: torch.Tensor) -> torch.Tensor:
        if xs.shape[-1] != self.config.input_dim:
            raise ValueError(f"xs has width {xs.shape[-1]} but config.input_dim={self.config.input_dim}")
        return self.read_in(xs.to(self.read_in.weight.dtype))

    def _y_tokens(self, ys: torch.Tensor, y_tokens: torch.Tensor | None = None) -> torch.Tensor:
        dtype = self.read_in.weight.dtype
        values = ys if ys.dim() == 3 else ys[..., None]  # (B, n, d_y)
        if self.read_in_targets is not None:
            return self.read_in_targets(values.to(dtype))
        if y_tokens is not None:
            return self.read_in(y_tokens.to(dtype))
        if values.shape[-1] > self.config.input_dim:
            raise ValueError(
                f"ys have width {values.shape[-1]} > config.input_dim={self.config.input_dim}: y is zero-padded to "
                "the x width (DESIGN §5.5), so output_dim must not exceed input_dim"
            )
        return self.read_in(F.pad(values.to(dtype), (0, self.config.input_dim - values.shape[-1])))

    def _s_tokens(self, ss: torch.Tensor | None) -> torch.Tensor | None:
        if (ss is None) != (self.read_in_steps is None):
            raise ValueError(
                f"ss (chain-of-thought steps) {'missing' if ss is None else 'given'} but config.cot_dim="
                f"{self.config.cot_dim}: pass ss exactly when the model was built with cot_dim"
            )
        return None if ss is None else self.read_in_steps(ss.to(self.read_in.weight.dtype))

    # --- forward ----------------------------------------------------------------------------------------------

    def forward_in_context(
        self,
        xs: torch.Tensor,
        ys: torch.Tensor | None = None,
        ss: torch.Tensor | None = None,
        y_tokens: torch.Tensor | None = None,
        targets: torch.Tensor | None = None,
        loss_mask: torch.Tensor | None = None,
        cache=None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        block_context: dict | None = None,
    ) -> InContextRegressionOutput:
        self.check_examples(xs, ys)
        if ys is None:
            ys = xs.new_zeros(xs.shape[0], 0, self.config.output_dim)
        x_tokens = self._x_tokens(xs)
        tokens, x_positions, s_positions = interleave(x_tokens, self._y_tokens(ys, y_tokens), self._s_tokens(ss))
        outputs = self.model(
            inputs_embeds=tokens,
            cache=cache,
            use_cache=bool(use_cache),
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            block_context=block_context,
        )
        hidden = outputs.last_hidden_state  # (B, T, d)
        step_predictions = None
        if s_positions is None:
            predictions = _squeeze_scalar(self.read_out(hidden[:, x_positions]))  # (B, N[, d_y])
        else:
            step_predictions = self.read_out_steps(hidden[:, x_positions])  # (B, N, k)
            predictions = _squeeze_scalar(self.read_out(hidden[:, s_positions]))  # (B, n[, d_y])
        if targets is None and ys.shape[1] == predictions.shape[1]:
            targets = ys
        loss = None
        if targets is not None:
            loss = masked_mse(predictions, targets, loss_mask)
            if ss is not None:  # the reference sums the step's coordinates: Σ_k (ŝ − s)², mean over examples
                step_errors = masked_mse(step_predictions[:, : ss.shape[1]], ss, loss_mask) * ss.shape[-1]
                loss = loss + step_errors
        return InContextRegressionOutput(
            loss=loss,
            predictions=predictions,
            step_predictions=step_predictions,
            hidden_states=outputs.hidden_states,
            attentions=outputs.attentions,
            aux_losses=outputs.aux_losses,
            cache=outputs.cache if use_cache else None,
        )

    @torch.no_grad()
    def predict_streaming(self, xs, ys, ss=None, y_tokens=None) -> torch.Tensor:
        """The predictions of `model(xs=xs, ys=ys)`, computed token by token through the cache (recurrent state).

        Args:
            xs: (B, N, d_x); ys: (B, n) or (B, n, d_y), n ≤ N; ss: (B, n, k) with chain-of-thought; y_tokens:
                (B, n, d_x) y-slot vectors in place of the padded ys.

        Returns:
            The same tensor as `.predictions` of the parallel forward (ŷ at x positions, or at s positions with
            chain-of-thought).
        """
        self.check_examples(xs, ys)
        x_tokens, s_tokens = self._x_tokens(xs), self._s_tokens(ss)
        y_all = self._y_tokens(ys, y_tokens)
        cache, predictions = None, []

        def step(token):
            nonlocal cache
            out = self.model(inputs_embeds=token[:, None], cache=cache, use_cache=True)
            cache = out.cache
            return out.last_hidden_state[:, -1]  # (B, d)

        for i in range(xs.shape[1]):
            hidden = step(x_tokens[:, i])
            if s_tokens is None:
                predictions.append(self.read_out(hidden))
            if i < y_all.shape[1]:
                if s_tokens is not None:
                    predictions.append(self.read_out(step(s_tokens[:, i])))
                step(y_all[:, i])
        return _squeeze_scalar(torch.stack(predictions, dim=1))
