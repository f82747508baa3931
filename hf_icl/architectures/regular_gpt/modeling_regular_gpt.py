"""`icl_regular_gpt` model classes: the shared skeleton with an adaptive-depth schedule (paper 2, §3.2).

The K shared blocks are applied at depths l = 0 … ⌈log_C T⌉ − 1 with dilation C^l. With a cache, every block
application keeps its keys and values, and the model keeps the top hidden states of all positions: when the
sequence grows past C^depth, the new depth is first run once over the cached positions (a one-time O(T·C·d)
step, log T times per sequence), so no decoding step recomputes the prefix. That catch-up pass reports no
attention maps: `attentions` holds one map per block application over the input's own queries.
"""

from __future__ import annotations

import torch

from ...modeling.decoder import ICLForCausalLM, ICLModel
from ...modeling.outputs import ForwardRecorder
from ...modeling.regression import ICLForRegression
from .configuration_regular_gpt import ICLRegularGPTConfig


def regular_depth(length: int, chunk_size: int) -> int:
    """⌈log_C T⌉ (at least 1): the depth whose dilated receptive field covers T positions."""
    depth = 1
    while chunk_size**depth < length:
        depth += 1
    return depth


class ICLRegularGPTModel(ICLModel):
    """RegularGPT backbone. Args: config (`ICLRegularGPTConfig`)."""

    config_class = ICLRegularGPTConfig

    def apply_depths(self, hidden_states, attention_mask, cache, depths, all_hidden_states=None, **context):
        thickness = len(self.layers)
        for depth in depths:
            for k, block in enumerate(self.layers):
                context["recorder"].next_layer()
                hidden_states = block(
                    hidden_states,
                    attention_mask=attention_mask,
                    cache=cache,
                    dilation=self.config.dilated_attention_chunk_size**depth,
                    application=depth * thickness + k,
                    **context,
                )
                if all_hidden_states is not None:
                    all_hidden_states.append(hidden_states)
        return hidden_states

    def depth_for(self, length: int) -> int:
        """Depth levels applied to an input of `length` positions: `config.fixed_depth`, else ⌈log_C T⌉."""
        return self.config.fixed_depth or regular_depth(length, self.config.dilated_attention_chunk_size)

    def run_layers(
        self, hidden_states, attention_mask, cache, input_ids, position_ids, all_hidden_states=None, **context
    ):
        past = cache.get_seq_length() if cache is not None else 0
        depth = self.depth_for(past + hidden_states.shape[1])
        if past and depth > self.depth_for(past):
            # The input outgrew the cached depth: run the new depths once over the cached positions.
            old_depth = self.depth_for(past)
            past_mask = attention_mask[:, :past] if attention_mask is not None else None
            catch_up = {**context, "recorder": ForwardRecorder()}  # its maps are not the input's
            top = self.apply_depths(cache.model_state.get("top"), past_mask, cache, range(old_depth, depth), **catch_up)
            cache.model_state.set("top", top)
        hidden_states = self.apply_depths(
            hidden_states, attention_mask, cache, range(depth), all_hidden_states, **context
        )
        if cache is not None:
            top = cache.model_state.get("top")
            cache.model_state.set("top", hidden_states if top is None else torch.cat([top, hidden_states], dim=1))
        return hidden_states


class ICLRegularGPTForCausalLM(ICLForCausalLM):
    """RegularGPT language model. Args: config (`ICLRegularGPTConfig`)."""

    config_class = ICLRegularGPTConfig
    base_model_class = ICLRegularGPTModel


class ICLRegularGPTForRegression(ICLForRegression):
    """RegularGPT with continuous read-in and read-out. Args: config (`ICLRegularGPTConfig`)."""

    config_class = ICLRegularGPTConfig
    base_model_class = ICLRegularGPTModel
