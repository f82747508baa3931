"""`icl_slowfast_transformer` model classes: the slow/fast Transformer of P3 (Learning Fast and Slow; DESIGN §5.7).

The backbone runs the slow stream y next to the fast stream x up to block ℓ (its blocks come from the `slowfast`
block feature, `block_features/slowfast/`), turns its output into y^ℓ — regularised (R_C, R_D or R'_D, or the
GP-prior KL of the VAE variant), optionally augmented — and lets y^ℓ modulate every later block through T(·; y^ℓ).
The LM head reads x only. `slow_features=y` replaces the computed y^ℓ by a given one, which is what `specialize(y)`
folds into the weights of a plain `icl_transformer`.
The language model adds P3 §3.5's auxiliary truncated loss in training.
"""

from __future__ import annotations

import dataclasses

import torch
from torch import nn
from torch.nn import functional as F

from ...block_features.slowfast.slow_features import (
    augment,
    gp_kl,
    moving_average,
    slow_change,
    slow_orthogonality,
    slow_statistics,
    truncated_batch,
)
from ...modeling.decoder import ICLForCausalLM, ICLModel, renamed_cache_kwarg
from ...modeling.regression import ICLForRegression
from ..transformer.configuration_transformer import ICLTransformerConfig
from ..transformer.modeling_transformer import ICLTransformerForCausalLM
from .configuration_slowfast_transformer import ICLSlowFastTransformerConfig


def as_slow_features(slow_features: torch.Tensor, slow_dim: int, length: int) -> torch.Tensor:
    """A given y^ℓ as (B|1, T|1, d_y): one vector (d_y,), one per sequence (B, d_y), or one per position (B, T, d_y)."""
    if slow_features.shape[-1] != slow_dim or slow_features.dim() > 3:
        raise ValueError(
            f"slow_features has shape {tuple(slow_features.shape)}; expected ({slow_dim},), (B, {slow_dim}) or "
            f"(B, T, {slow_dim}) (with num_beams or num_return_sequences, pass (B, {slow_dim}))"
        )
    if slow_features.dim() == 3 and slow_features.shape[1] not in (1, length):
        raise ValueError(f"slow_features has {slow_features.shape[1]} positions but the input has {length}")
    return slow_features.reshape(-1, 1, slow_dim) if slow_features.dim() < 3 else slow_features


class ICLSlowFastTransformerModel(ICLModel):
    """Slow/fast Transformer backbone. Args: config (`ICLSlowFastTransformerConfig`).

    Block context keywords it reads (`block_context=`, or the language model's arguments): `slow_features` (y^ℓ to
    use instead of the computed one), `slow_update_rate` (γ: with `slow_features` as the initial value, use the
    moving average of the computed y^ℓ, P3 Fig. 13) and `slow_record` (a dict that receives the y^ℓ used, under
    `"features"`).
    """

    config_class = ICLSlowFastTransformerConfig

    def __init__(self, config: ICLSlowFastTransformerConfig):
        super().__init__(config)
        self.slow_in_proj = nn.Linear(config.hidden_size, config.slow_dim, bias=False)  # y⁰ from the embedded input
        self.slow_log_variance = (
            nn.Linear(config.slow_dim, config.slow_dim) if config.slow_regularizer == "vae" else None
        )
        self.post_init()

    def slow_stream(self, x, y, attention_mask, cache, input_ids, position_ids, all_hidden_states=None, **context):
        """Run blocks 0 … ℓ − 1 on both streams; returns (x^ℓ, y^ℓ before sampling and augmentation)."""
        for layer in self.layers[: self.config.slow_layer]:
            context["recorder"].next_layer()
            x, y = layer(x, attention_mask, cache, input_ids, position_ids, slow_stream=y, **context)
            if all_hidden_states is not None:
                all_hidden_states.append(x)
        return x, y

    def _features(self, y, attention_mask, cache, recorder, slow_features, slow_update_rate):
        """y^ℓ as the modulated blocks use it (B, T|1, d_y), with the regularisers reported in training."""
        config, length = self.config, y.shape[1] if y is not None else 0
        if y is None:
            return slow_features
        if self.slow_log_variance is not None and self.training:  # VAE: y ~ N(μ, diag σ²), μ from the slow stream
            log_variance = self.slow_log_variance(y)
            kl = gp_kl(y, log_variance, config.gp_noise, config.gp_length, config.gp_scale)
            recorder.add_aux_loss("slow_kl", config.slow_kl_weight * kl)
            y = y + torch.randn_like(y) * (0.5 * log_variance).exp()
        elif self.training and config.slow_regularizer == "elementwise" and length > 1:
            diversity = slow_orthogonality if config.slow_diversity == "orthogonal" else slow_statistics
            recorder.add_aux_loss("slow_change", config.slow_change_weight * slow_change(y, attention_mask))
            recorder.add_aux_loss("slow_diversity", config.slow_diversity_weight * diversity(y, attention_mask))
        if self.training and config.slow_augment in ("forward", "both"):
            y = augment(y, config.slow_smoothing, config.slow_shift)
        if slow_update_rate is not None:  # informed mode: moving average from the given y (carried by the cache)
            initial = cache.model_state.get("slow_average") if cache is not None and cache.seen_tokens else None
            initial = slow_features[:, -1] if initial is None else initial
            y = moving_average(y, initial.expand(y.shape[0], -1), slow_update_rate)
            if cache is not None:
                cache.model_state.set("slow_average", y[:, -1])
        return y

    def run_layers(
        self,
        hidden_states,
        attention_mask,
        cache,
        input_ids,
        position_ids,
        all_hidden_states=None,
        slow_features=None,
        slow_update_rate=None,
        slow_record=None,
        stop_after_slow=False,
        **context,
    ):
        """Blocks ν < ℓ on (x, y) — on x alone when y^ℓ is given — then y^ℓ, then the modulated blocks ν ≥ ℓ on x.

        `stop_after_slow=True` (block context) returns x^ℓ once y^ℓ is known (`compute_slow_features`).
        """
        x, ell = hidden_states, self.config.slow_layer
        if slow_features is not None:
            slow_features = as_slow_features(slow_features, self.config.slow_dim, x.shape[1]).to(x.dtype)
        computes_slow = slow_features is None or slow_update_rate is not None
        y = None
        if computes_slow:
            y = self.slow_in_proj(x)  # y⁰: (B, T, d_y)
            x, y = self.slow_stream(x, y, attention_mask, cache, input_ids, position_ids, all_hidden_states, **context)
        features = self._features(y, attention_mask, cache, context["recorder"], slow_features, slow_update_rate)
        if slow_record is not None:
            slow_record["features"] = features
        if stop_after_slow:
            return x
        for index in range(ell if computes_slow else 0, len(self.layers)):
            context["recorder"].next_layer()
            x = self.layers[index](x, attention_mask, cache, input_ids, position_ids, slow_features=features, **context)
            if all_hidden_states is not None:
                all_hidden_states.append(x)
        return x

    @torch.no_grad()
    def compute_slow_features(self, input_ids=None, attention_mask=None, inputs_embeds=None) -> torch.Tensor:
        """y^ℓ of every position, (B, T, d_y): μ for the VAE variant, without augmentation (as in evaluation).

        Runs the embedding and blocks 0 … ℓ − 1 only.
        """
        record, training = {}, self.training
        self.eval()
        try:
            self.forward(
                input_ids=input_ids,
                inputs_embeds=inputs_embeds,
                attention_mask=attention_mask,
                use_cache=False,
                block_context={"slow_record": record, "stop_after_slow": True},
            )
        finally:
            self.train(training)
        return record["features"]


class ICLSlowFastTransformerForCausalLM(ICLForCausalLM):
    """Slow/fast Transformer language model (P3). Args: config (`ICLSlowFastTransformerConfig`).

    `model(input_ids, slow_features=y)` holds y^ℓ at y ((d_y,), (B, d_y) or (B, T, d_y)); `model.specialize(y)` folds
    a frozen y into a plain `icl_transformer` of width d_x with the same logits. In training, with labels, the output's
    `aux_losses` hold `truncated_lm` (P3 §3.5) besides the regularisers.
    """

    config_class = ICLSlowFastTransformerConfig
    base_model_class = ICLSlowFastTransformerModel

    @renamed_cache_kwarg
    def forward(
        self,
        input_ids=None,
        attention_mask=None,
        position_ids=None,
        cache=None,
        inputs_embeds=None,
        labels=None,
        use_cache=None,
        output_attentions=None,
        output_hidden_states=None,
        return_dict=None,
        logits_to_keep: int = 0,
        block_context: dict | None = None,
        slow_features: torch.Tensor | None = None,
        slow_update_rate: float | None = None,
        **kwargs,
    ):
        """Next-token logits; see `ICLForCausalLM.forward`.

        Args:
            slow_features (`torch.Tensor`, *optional*): y^ℓ to use instead of the computed one: (d_y,), (B, d_y) or
                (B, T, d_y). Blocks ν < ℓ then run x alone.
            slow_update_rate (`float`, *optional*): γ of the "informed" mode (P3 Fig. 13): y^ℓ is computed and
                used as the moving average u_t = (1 − γ) u_{t−1} + γ y_t starting from `slow_features`.
        """
        context = dict(block_context or {})
        if slow_features is not None:
            context["slow_features"] = slow_features
        if slow_update_rate is not None:
            if slow_features is None:
                raise ValueError("slow_update_rate needs slow_features, the initial value of the moving average")
            context["slow_update_rate"] = float(slow_update_rate)
        truncated = self.training and labels is not None and slow_features is None and inputs_embeds is None
        truncated = truncated and self.config.truncated_loss_weight > 0
        if truncated:
            context["slow_record"] = record = {}
        outputs = super().forward(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            cache=cache,
            inputs_embeds=inputs_embeds,
            labels=labels,
            use_cache=use_cache,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            logits_to_keep=logits_to_keep,
            block_context=context or None,
            **kwargs,
        )
        if truncated:
            loss = self.truncated_loss(input_ids, labels, record["features"])
            outputs.aux_losses["truncated_lm"] = self.config.truncated_loss_weight * loss
        return outputs

    def truncated_loss(self, input_ids, labels, slow) -> torch.Tensor:
        """P3 §3.5: LM loss on each row truncated at l_trunc ~ U{0 … ⌊f·n⌋ − l_Δ}, with ȳ from the full pass."""
        config = self.config
        length = input_ids.shape[1]
        highest = max(int(config.truncated_max_fraction * length) - config.truncated_context, 0)
        starts = torch.randint(0, highest + 1, (input_ids.shape[0],), device=input_ids.device)
        if config.slow_augment in ("auxiliary", "both"):
            slow = augment(slow, config.slow_smoothing, config.slow_shift)
        if config.truncated_detach_slow:
            slow = slow.detach()
        slow = slow.expand(-1, length, -1) if slow.shape[1] == 1 else slow
        pad = config.pad_token_id if config.pad_token_id is not None else 0
        ids, targets, held = truncated_batch(
            input_ids,
            labels,
            slow,
            starts,
            config.truncated_context,
            config.truncated_hold,
            config.truncated_window,
            pad,
        )
        logits = super().forward(input_ids=ids, use_cache=False, block_context={"slow_features": held}).logits
        # next-token cross-entropy over the kept labels (zero, not NaN, when a short batch keeps none)
        losses = F.cross_entropy(logits[:, :-1].flatten(0, 1).float(), targets[:, 1:].flatten(), reduction="none")
        kept = (targets[:, 1:] != -100).sum()
        return losses.sum() / kept.clamp(min=1)

    def fast_config(self) -> ICLTransformerConfig:
        """The `icl_transformer` config of the fast stream alone (width d_x, the same depth, heads and vocabulary)."""
        shared = {field.name for field in dataclasses.fields(ICLTransformerConfig)}
        shared -= {"preset", "architectures", "transformers_version"}
        values = {name: getattr(self.config, name) for name in shared if hasattr(self.config, name)}
        return ICLTransformerConfig(**values)

    @torch.no_grad()
    def specialize(self, slow_features: torch.Tensor) -> ICLTransformerForCausalLM:
        """Fold a frozen y^ℓ into the weights: a plain `icl_transformer` of width d_x that needs no y (P3 §3.5).

        Blocks ν < ℓ keep their x weights; in every block ν ≥ ℓ, T(·; y) = I + L̂(y) R̂(y)ᵀ is multiplied into the
        q/k/v projection and the first MLP matrix that read it. The result's logits equal
        `self(input_ids, slow_features=y)`.

        Args:
            slow_features (`torch.Tensor`): y^ℓ, shape (d_y,) or (1, d_y).

        Returns:
            An `ICLTransformerForCausalLM` (saves, loads and generates like any checkpoint).
        """
        y = slow_features.reshape(-1)
        if y.numel() != self.config.slow_dim:
            raise ValueError(
                f"specialize needs one y^ℓ of shape ({self.config.slow_dim},), got {tuple(slow_features.shape)}; a "
                "plain model has one set of weights"
            )
        specialised = ICLTransformerForCausalLM(self.fast_config()).to(device=self.device, dtype=self.dtype)
        target = specialised.state_dict()
        specialised.load_state_dict({name: value for name, value in self.state_dict().items() if name in target})
        for index in range(self.config.slow_layer, self.config.num_hidden_layers):
            source, block = self.model.layers[index], specialised.model.layers[index]
            source.mixer_modulation.fold_into(block.mixer.qkv_proj, y)
            source.ffn_modulation.fold_into(block.ffn.fc_in, y)
        specialised.config._attn_implementation = self.config._attn_implementation
        return specialised.eval() if not self.training else specialised


class ICLSlowFastTransformerForRegression(ICLForRegression):
    """Slow/fast Transformer with continuous read-in and read-out. Args: config (`ICLSlowFastTransformerConfig`)."""

    config_class = ICLSlowFastTransformerConfig
    base_model_class = ICLSlowFastTransformerModel
