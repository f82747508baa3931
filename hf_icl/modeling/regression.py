"""Continuous input and output ends of the shared decoder, for in-context regression (paper 5; Garg et al., 2022).

    h⁰_t = W_in x_t + b_in,   ŷ_t = W_out h^L_t + b_out

The read-in `Linear(d_x, d)` feeds the backbone as `inputs_embeds` (the backbone then owns no token embedding,
`config.input_dim` being set), and the read-out `Linear(d, d_y)` maps every position's final hidden state to a
prediction. The backbone is the architecture's own (`base_model_class`), so every architecture gets a regression
shell by naming its config and backbone. No loss is computed here: the task family's objective decides which
positions are scored and how.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from transformers.utils import ModelOutput

from .configuration import ICLConfig
from .decoder import ICLModel, ICLPreTrainedModel


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


class ICLForRegression(ICLPreTrainedModel):
    """The decoder with a linear read-in from `input_dim` and a linear read-out to `output_dim` at every position.

    Architecture shells subclass it with their `config_class` and `base_model_class`. Cached decoding is not
    supported (in-context regression scores every position of one forward pass).

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
        super().__init__(config)
        self.read_in = nn.Linear(config.input_dim, config.hidden_size)
        self.model = self.base_model_class(config)
        self.read_out = nn.Linear(config.hidden_size, config.output_dim)
        self.post_init()

    def get_input_embeddings(self):
        return self.read_in

    def forward(
        self,
        inputs: torch.FloatTensor,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.LongTensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        **context,
    ) -> ICLRegressionOutput:
        """Predict at every position.

        Args:
            inputs (`torch.FloatTensor`): (B, T, input_dim) continuous inputs.
            attention_mask (`torch.Tensor`, *optional*): (B, T), 1 for real positions and 0 for padding.
            position_ids (`torch.LongTensor`, *optional*): (B, T) positions; by default counted over real tokens.
            output_attentions, output_hidden_states (`bool`, *optional*): as in `ICLModel.forward`.
            **context: the block context, passed to every block (see `ICLModel.forward`'s `block_context`).

        Returns:
            `ICLRegressionOutput` with `predictions` (B, T, output_dim) and `loss=None`.
        """
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
