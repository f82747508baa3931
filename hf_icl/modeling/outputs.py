"""What one forward pass reports besides hidden states: attention maps and named auxiliary losses.

`ICLModel.forward` creates one `ForwardRecorder` per call and passes it to every block as the `recorder` keyword
of the block context; the block hands the same context to its mixer and its FFN. The model opens one slot per
block application (`next_layer`), a softmax-attention mixer fills its slot with its (B, H, T, S) probabilities
when maps were asked for, and any mixer, FFN or block may report a named auxiliary loss. Mixers that have no
attention never touch the recorder, so their slot stays `None`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers.modeling_outputs import BaseModelOutputWithPast, CausalLMOutputWithPast


class ForwardRecorder:
    """Per-call collector of attention maps and auxiliary losses (the `recorder` keyword of the block context).

    Args:
        output_attentions (`bool`): whether attention mixers should compute and report their probabilities (they
            then take the eager path; otherwise they keep their fused path and report nothing).
    """

    def __init__(self, output_attentions: bool = False):
        self.output_attentions = output_attentions
        self.attentions: list[torch.Tensor | None] = []
        self.aux_losses: dict[str, torch.Tensor] = {}

    def next_layer(self) -> None:
        """Open the attention-map slot of the next block application (`None` until a mixer fills it)."""
        if self.output_attentions:
            self.attentions.append(None)

    def add_attention(self, probs: torch.Tensor) -> None:
        """Report the (B, H, T, S) attention probabilities of the current block application."""
        if self.output_attentions:
            self.attentions[-1] = probs

    def add_aux_loss(self, name: str, value: torch.Tensor) -> None:
        """Report a scalar auxiliary loss; values reported under the same name (e.g. by several layers) are summed.

        Args:
            name (`str`): the loss's name, the key of `aux_losses` in the model output (put a layer index in it
                to keep per-layer terms apart).
            value (`torch.Tensor`): a scalar that stays in the autograd graph.
        """
        self.aux_losses[name] = value if name not in self.aux_losses else self.aux_losses[name] + value


@dataclass
class ICLModelOutput(BaseModelOutputWithPast):
    """`BaseModelOutputWithPast` plus the auxiliary losses the blocks reported.

    Args:
        aux_losses (`dict[str, torch.Tensor]`): named scalar losses (an empty dict when no block reported one).
        attentions (`tuple[torch.Tensor | None]`, *optional*): with `output_attentions=True`, one (B, H, T, S)
            map per block application: softmax probabilities, or the exact linear token-mixing map
            (`mixers/ops/mixing_maps.py`); `None` for blocks without either (LSTM, n-gram blocks).
        states (`tuple[dict | None]`, *optional*): with `output_states`, per layer `{name: (B, P, *shape)}`, the
            cache state after each of `state_positions` (`modeling/states.py`); `None` for non-recurrent layers.
        state_positions (`list[int]`, *optional*): the P positions of `states`.
    """

    aux_losses: dict[str, torch.Tensor] | None = None
    states: tuple | None = None
    state_positions: list[int] | None = None


@dataclass
class ICLCausalLMOutput(CausalLMOutputWithPast):
    """`CausalLMOutputWithPast` plus the auxiliary losses; `loss` stays the token cross-entropy alone.

    Args:
        aux_losses (`dict[str, torch.Tensor]`): named scalar losses for the trainer to weight and add (an empty
            dict when none).
        attentions, states, state_positions: as in `ICLModelOutput`.
    """

    aux_losses: dict[str, torch.Tensor] | None = None
    states: tuple | None = None
    state_positions: list[int] | None = None
