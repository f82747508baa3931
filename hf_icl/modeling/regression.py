"""Continuous input and output ends of the shared decoder, for in-context regression (paper 5; Garg et al., 2022).

    h⁰_t = W_in x_t + b_in,   ŷ_t = W_out h^L_t + b_out

The read-in `Linear(d_x, d)` feeds the backbone as `inputs_embeds` (the backbone then owns no token embedding,
`config.input_dim` being set), and the read-out `Linear(d, d_y)` maps every position's final hidden state to a
prediction. The backbone is the architecture's own (`base_model_class`), so every architecture gets a regression
shell by naming its config and backbone. On a ready sequence (`inputs`) no loss is computed: the task family's
objective decides which positions are scored and how. Called with in-context examples (`xs`, `ys`), the same model
interleaves them, reads predictions at the x positions and returns the MSE (`in_context.py`, DESIGN §5.5); that is
what `AutoModelForInContextRegression` builds.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from transformers.utils import ModelOutput

from ..block_features.feature_registry import used_block_features
from .configuration import ICLConfig
from .decoder import ICLModel, ICLPreTrainedModel, renamed_cache_kwarg
from .in_context import InContextRegressionMixin, check_tensor


@dataclass
class ICLRegressionOutput(ModelOutput):
    """Output of `ICLForRegression`.

    Args:
        loss (`torch.Tensor`, *optional*): always `None` here (the task family's objective computes the loss); kept
            so that code reading `.loss` of any hf_icl output works unchanged.
        predictions (`torch.Tensor`): (B, T, output_dim) read-out at every position.
        hidden_states (`tuple[torch.Tensor]`, *optional*): with `output_hidden_states=True`, the embedded inputs
            (read-in plus any position embedding) and every block application's output.
        attentions (`tuple[torch.Tensor | None]`, *optional*): with `output_attentions=True`, one (B, H, T, S)
            probability map per block application (`None` for blocks without softmax attention).
        aux_losses (`dict[str, torch.Tensor]`): named auxiliary losses the blocks reported (empty when none).
    """

    loss: torch.Tensor | None = None
    predictions: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor | None, ...] | None = None
    aux_losses: dict[str, torch.Tensor] | None = None


class ICLForRegression(InContextRegressionMixin, ICLPreTrainedModel):
    """The decoder with a linear read-in from `input_dim` and a linear read-out to `output_dim` at every position.

    Architecture shells subclass it with their `config_class` and `base_model_class`. Two ways to call it:
    `model(inputs)` predicts at every position of a ready continuous sequence; `model(xs=..., ys=...)` is in-context
    regression (see `InContextRegressionMixin.forward_in_context`), where `predict_streaming` gives the same
    predictions through the cache. A config that turns on a block feature needing token ids is refused.

    Args:
        config (`ICLConfig`): the architecture's configuration, with `input_dim` (d_x) and `output_dim` (d_y) set.
    """

    base_model_class = ICLModel
    # Exported under `AutoModel` in `auto_map` (in place of the backbone), so that transformers alone loads the
    # whole regression model: `AutoModel.from_pretrained(folder, trust_remote_code=True)`.
    auto_class_name = "AutoModel"

    def __init__(self, config: ICLConfig):
        for field in ("input_dim", "output_dim"):
            if getattr(config, field) is None:
                raise ValueError(f"{field}=None: {type(self).__name__} needs config.{field} as a positive integer")
        for feature in used_block_features(config):
            if not feature.continuous_inputs:
                value = (
                    f"{feature.selector}={getattr(config, feature.selector)!r}" if feature.selector else feature.name
                )
                raise ValueError(
                    f"{value}: {feature.needs_token_ids}, which continuous inputs (input_dim) do not have; allowed "
                    "with input_dim: None"
                )
        super().__init__(config)
        self.read_in = nn.Linear(config.input_dim, config.hidden_size)
        self.model = self.base_model_class(config)
        self.read_out = nn.Linear(config.hidden_size, config.output_dim)
        self.build_in_context_heads(config)
        self.post_init()

    def get_input_embeddings(self):
        return self.read_in

    @renamed_cache_kwarg
    def forward(
        self,
        inputs: torch.FloatTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.LongTensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        *,
        xs: torch.FloatTensor | None = None,
        ys: torch.Tensor | None = None,
        ss: torch.Tensor | None = None,
        y_tokens: torch.Tensor | None = None,
        targets: torch.Tensor | None = None,
        loss_mask: torch.Tensor | None = None,
        cache=None,
        use_cache: bool | None = None,
        **context,
    ) -> ICLRegressionOutput:
        """Predict at every position of `inputs`, or in context from examples `xs`, `ys`.

        Args:
            inputs (`torch.FloatTensor`): (B, T, input_dim) continuous inputs.
            xs, ys, ss, y_tokens, targets, loss_mask, cache, use_cache: the in-context path (pass `xs`
                instead of `inputs`); see `InContextRegressionMixin.forward_in_context`. Returns an
                `InContextRegressionOutput` with `.predictions` (B, N[, d_y]) and `.loss`.
            attention_mask (`torch.Tensor`, *optional*): (B, T), 1 for real positions and 0 for padding.
            position_ids (`torch.LongTensor`, *optional*): (B, T) positions; by default counted over real tokens.
            output_attentions, output_hidden_states (`bool`, *optional*): as in `ICLModel.forward`.
            **context: the block context, passed to every block (see `ICLModel.forward`'s `block_context`).

        Returns:
            `ICLRegressionOutput` with `predictions` (B, T, output_dim) and `loss=None`.
        """
        if (inputs is None) == (xs is None):
            raise ValueError("pass exactly one of inputs (a ready sequence) or xs (in-context examples, with ys)")
        if xs is not None:
            in_context = dict(ys=ys, ss=ss, y_tokens=y_tokens, targets=targets, loss_mask=loss_mask)
            return self.forward_in_context(
                xs,
                **in_context,
                cache=cache,
                use_cache=use_cache,
                output_attentions=output_attentions,
                output_hidden_states=output_hidden_states,
                block_context=context or None,
            )
        check_tensor("inputs", inputs, (3,), f"(batch, T, input_dim={self.config.input_dim})")
        if inputs.shape[-1] != self.config.input_dim:
            raise ValueError(f"inputs has width {inputs.shape[-1]} but config.input_dim={self.config.input_dim}")
        outputs = self.model(
            inputs_embeds=self.read_in(inputs),  # (B, T, d)
            attention_mask=attention_mask,
            position_ids=position_ids,
            use_cache=False,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            block_context=context or None,
        )
        predictions = self.read_out(outputs.last_hidden_state)  # (B, T, d_y)
        return ICLRegressionOutput(
            predictions=predictions,
            hidden_states=outputs.hidden_states,
            attentions=outputs.attentions,
            aux_losses=outputs.aux_losses,
        )
