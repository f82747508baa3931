"""The shared decoder (paper 1, Appendix A.2): embedding → L × DecoderBlock → final norm → output projection.

Every architecture in hf_icl is this skeleton with a different config: which mixer each layer uses, which FFN,
which norm and which position scheme. Architecture shells only name their config class.
"""

from __future__ import annotations

import math
import os

import torch
from torch import nn
from transformers import GenerationMixin, PreTrainedModel
from transformers import initialization as init
from transformers.utils.deprecation import deprecate_kwarg

from ..block_features.feature_registry import feature_call_context, used_block_features
from .cache import ICLCache
from .configuration import ICLConfig
from .layers import DecoderBlock, build_norm
from .outputs import ForwardRecorder, ICLCausalLMOutput, ICLModelOutput
from .remote_code import save_pretrained_with_code
from .states import per_position_states, requested_positions

# transformers 5.24 renamed `past_key_values` to `cache`; the old name still works, with transformers' warning.
renamed_cache_kwarg = deprecate_kwarg("past_key_values", version="6.0.0", new_name="cache", raise_if_both_names=True)


def only_right_padding(attention_mask: torch.Tensor) -> bool:
    """Whether every row of the (B, T) mask is ones then zeros: padding only after the last real token."""
    mask = attention_mask.bool()
    return bool((mask[:, 1:] <= mask[:, :-1]).all())


def build_layers(config, block_class=DecoderBlock) -> nn.ModuleList:
    """The decoder's layers in order: `block_class(config, i)` for i < L, then as the config's block features say.

    A used feature's `block_class`, if any, replaces the default `DecoderBlock` (a model class naming its own
    `block_class` keeps it); each used feature's `place_layers` then edits the plan (e.g. inserts blocks after a
    layer, or instead of it). The layers are built in their final order; layers placed by features get cache slots
    L, L + 1, ... in that order, so every layer keeps its own state.

    Args:
        config: an `ICLConfig`.
        block_class: `(config, layer_idx) -> nn.Module`, the model class's choice for the L regular layers.
    """
    features = used_block_features(config)
    given = [feature for feature in features if feature.block_class is not None]
    if len(given) > 1:
        raise ValueError(f"block features {', '.join(f.name for f in given)} each give the block class; use one")
    if given and block_class is DecoderBlock:
        block_class = given[0].block_class
    regular = [lambda slot, i=i: block_class(config, i) for i in range(config.num_hidden_layers)]
    plan = list(regular)
    for feature in features:
        plan = feature.place_layers(config, plan)
    layers, slot, regular_layers = [], config.num_hidden_layers, {}
    for builder in plan:
        index = next((i for i, own in enumerate(regular) if builder is own), None)
        if index is not None:
            layers.append(builder(None))
            regular_layers[index] = layers[-1]
        else:
            layers.append(builder(slot))
            slot += 1
    for feature in features:  # then each feature may add modules to the regular layers it extends
        for index, layer in sorted(regular_layers.items()):
            feature.extend_layer(config, layer, index)
    return nn.ModuleList(layers)


class ICLPreTrainedModel(PreTrainedModel):
    """Base class: weight init, cache policy and the remote-code export on `save_pretrained`."""

    config_class = ICLConfig
    base_model_prefix = "model"
    supports_gradient_checkpointing = False
    _no_split_modules = ["DecoderBlock"]  # the backbone adds the classes of the layers its block features place
    _skip_keys_device_placement = ["cache"]
    _supports_sdpa = True
    _supports_attention_backend = True
    auto_class_name = "AutoModel"

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        # Our models build their own `ICLCache` (recurrent states do not fit a DynamicCache).
        return False

    def _initialize_weights(self, module, is_custom_code: bool = False):
        # transformers treats every model outside its own package as "custom code" and then skips modules that own no
        # parameters directly (DecoderBlock, mixers made only of submodules), so their `_init_weights` branch (GPT-2
        # residual scaling, `reset_mixer_parameters`) would silently never run. All our initialisers go through
        # `transformers.initialization`, which leaves tensors loaded by `from_pretrained` untouched, so the shortcut
        # is not needed.
        super()._initialize_weights(module, is_custom_code=False)

    @torch.no_grad()
    def _init_weights(self, module):
        super()._init_weights(module)
        if isinstance(module, DecoderBlock):
            # GPT-2 scheme: residual projections scaled by 1/√(2L) for the two residual branches per block. Which
            # layers those are is declared where they are built (`mixers.ops.residual.residual_projection`).
            std = self.config.initializer_range / math.sqrt(2 * self.config.num_hidden_layers)
            for part in module.modules():
                if getattr(part, "is_residual_projection", False):
                    init.normal_(part.weight, mean=0.0, std=std)
        if hasattr(module, "reset_mixer_parameters"):
            module.reset_mixer_parameters()

    @classmethod
    def from_pretrained(cls, *args, **kwargs):
        """`PreTrainedModel.from_pretrained`, with every loaded weight 64-byte aligned.

        safetensors packs tensors back to back, so one that follows an odd-sized tensor (a width-1 read-out bias)
        loads at an unaligned address, where CPU matmul kernels round differently: the loaded model's outputs would
        differ from the saved model's in the last bit. Such tensors are copied into aligned memory.
        """
        model = super().from_pretrained(*args, **kwargs)
        with torch.no_grad():
            for parameter in model.parameters():
                if parameter.data_ptr() % 64:
                    parameter.data = parameter.data.clone()
        return model

    @classmethod
    def is_remote_code(cls) -> bool:
        # `register_for_auto_class` still records the auto class; `save_pretrained` below ships the code for it.
        # Answering False keeps transformers' own copy step (single-dot imports only) from running on top and failing.
        return False

    def save_pretrained(self, save_directory: str | os.PathLike, is_main_process: bool = True, **kwargs):
        """`PreTrainedModel.save_pretrained` that also ships the modeling code, writing the folder atomically.

        The standard route: classes registered with `register_for_auto_class` (by default the config, this model
        under `auto_class_name` and its backbone under `AutoModel`) are written as flat modules with `auto_map`, so
        `AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True)` works where hf_icl is not installed.
        `push_to_hub` (the method, or `push_to_hub=True` here) uploads the same folder. See `remote_code`.

        Args:
            save_directory: the checkpoint folder; a failed save leaves it as it was.
            is_main_process, **kwargs: as in `PreTrainedModel.save_pretrained`.
        """
        kwargs["is_main_process"] = is_main_process
        return save_pretrained_with_code(self, super().save_pretrained, save_directory, **kwargs)


class ICLModel(ICLPreTrainedModel):
    """The decoder backbone without the output projection.

    With `config.input_dim` set the model reads continuous inputs: it owns no token embedding (`embed_tokens` is
    `None`) and takes `inputs_embeds` only (a read-in such as `ICLForRegression.read_in` produces them).

    Args:
        config (`ICLConfig`): the architecture's configuration.
    """

    # `(config, layer_idx) -> block`: the class of the L regular layers. A block feature may give another one
    # (`BlockFeature.block_class`, e.g. blocks that carry a second stream); a model class naming its own keeps it.
    block_class = DecoderBlock

    def __init__(self, config: ICLConfig):
        super().__init__(config)
        self.embed_tokens = None
        if config.input_dim is None:
            self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.embed_positions = None
        if config.position_embedding == "learned":
            self.embed_positions = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.dropout = nn.Dropout(config.dropout)
        self.layers = build_layers(config, self.block_class)  # L blocks, plus any layers block features place
        self._no_split_modules = list(
            dict.fromkeys([*self._no_split_modules, *(type(l).__name__ for l in self.layers)])
        )
        self.norm = build_norm(config)
        self.post_init()

    def get_input_embeddings(self):
        return self.embed_tokens

    def set_input_embeddings(self, value):
        self.embed_tokens = value

    def state_size(self) -> int | None:
        """Bytes of recurrent state per sequence summed over layers, or `None` if any layer is attention."""
        sizes = [layer.mixer.state_size() for layer in self.layers]
        return None if any(size is None for size in sizes) else sum(sizes)

    def _position_ids(self, attention_mask, past_length: int, length: int, device) -> torch.Tensor:
        if attention_mask is not None:
            return (attention_mask.long().cumsum(-1) - 1).clamp(min=0)[:, -length:]  # (B, T)
        return torch.arange(past_length, past_length + length, device=device)[None]  # (1, T)

    def run_layers(
        self, hidden_states, attention_mask, cache, input_ids, position_ids, all_hidden_states=None, **context
    ):
        """Apply the blocks in order (architectures with another schedule, e.g. adaptive depth, override this).

        `context` is the block context: the caller's `block_context` plus the per-call `recorder`. An override
        passes all of it to every block and calls `recorder.next_layer()` before each block application, so that
        attention maps line up with `hidden_states[1:]`.
        """
        for layer in self.layers:
            context["recorder"].next_layer()
            hidden_states = layer(
                hidden_states,
                attention_mask=attention_mask,
                cache=cache,
                input_ids=input_ids,
                position_ids=position_ids,
                **context,
            )
            if all_hidden_states is not None:
                all_hidden_states.append(hidden_states)
        return hidden_states

    @renamed_cache_kwarg
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.LongTensor | None = None,
        cache: ICLCache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        block_context: dict | None = None,
        output_states: bool | list[int] | None = None,
        **kwargs,
    ) -> ICLModelOutput:
        """Run the decoder.

        Args:
            output_states (`bool` or `list[int]`, *optional*): return in `states`, for every layer, its recurrent
                state after each position (`True`) or after the given positions, as `{name: (B, P, *shape)}` equal
                to the decode cache's state there (`None` for layers without a fixed-size state); the positions are
                in `state_positions`. See `modeling/states.py`.
            output_attentions (`bool`, *optional*): return one (B, H, T, S) probability map per block application
                in `attentions` (`None` for blocks without softmax attention); attention takes its eager path for
                this call only. Defaults to `config.output_attentions`.
            block_context (`dict`, *optional*): keyword arguments passed unchanged to every block, which hands them
                to its mixer and its FFN (e.g. a second stream that modulates the blocks). Mixers and FFNs ignore
                keywords they do not use. The key `recorder` is reserved for the per-call `ForwardRecorder`.
            Other arguments are the usual `transformers` ones.
        """
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("pass exactly one of input_ids or inputs_embeds")
        if input_ids is not None and self.embed_tokens is None:
            raise ValueError(
                f"input_dim={self.config.input_dim} is set, so the model has no token embedding: pass inputs_embeds "
                "(B, T, hidden_size), e.g. through ICLForRegression's read-in, or use input_dim=None for token ids"
            )
        if block_context and "recorder" in block_context:
            raise ValueError("block_context may not set 'recorder': the model creates one ForwardRecorder per call")
        features_context = feature_call_context(self.config)  # fresh per call: what one call's layers share
        clash = sorted(set(block_context or {}) & set(features_context))
        if clash:
            raise ValueError(f"block_context may not set {clash[0]!r}: a block feature of this model gives it")
        if output_attentions is None:
            output_attentions = self.config.output_attentions
        recorder = ForwardRecorder(output_attentions=bool(output_attentions))
        use_cache = use_cache if use_cache is not None else (self.config.use_cache and not self.training)
        if cache is not None and not isinstance(cache, ICLCache):
            raise TypeError(
                f"cache must be an hf_icl ICLCache, got {type(cache).__name__}; "
                "let the model create it (use_cache=True)"
            )
        if not use_cache:
            cache = None
        elif cache is None:
            cache = ICLCache(self.config.num_hidden_layers)
        past_length = cache.get_seq_length() if cache is not None else 0

        states = positions = None
        if output_states:
            if cache is not None and cache.get_seq_length() > 0:
                raise ValueError("output_states needs a forward from the sequence start (no cache continued)")
            length = (input_ids if input_ids is not None else inputs_embeds).shape[1]
            positions = requested_positions(output_states, length)
            positions, states = per_position_states(self, input_ids, inputs_embeds, attention_mask, positions)
        hidden_states = self.embed_tokens(input_ids) if inputs_embeds is None else inputs_embeds  # (B, T, d)
        length = hidden_states.shape[1]
        scoring = cache is None and not output_attentions
        if attention_mask is not None and (
            bool(attention_mask.all()) or (scoring and only_right_padding(attention_mask))
        ):
            # No padding, or padding after the last token of every row without a cache (a scoring batch): every
            # mixer is causal, so no real position reads a padded one, and the mixers take their unmasked paths
            # (SDPA's flash kernel instead of its masked one). A cache must not take in the padding's states, and
            # maps keep their masked padding rows, so those keep the mask.
            attention_mask = None
        if position_ids is None:
            position_ids = self._position_ids(attention_mask, past_length, length, hidden_states.device)
        if self.embed_positions is not None:
            longest = int(position_ids.max()) + 1
            if longest > self.config.max_position_embeddings:
                raise ValueError(
                    f"input reaches position {longest} but position_embedding='learned' covers only "
                    f"max_position_embeddings={self.config.max_position_embeddings}; shorten the input or use a "
                    "position scheme that extrapolates"
                )
            hidden_states = hidden_states + self.embed_positions(position_ids)
        hidden_states = self.dropout(hidden_states)

        all_hidden_states = [hidden_states] if output_hidden_states else None
        layer_inputs = (hidden_states, attention_mask, cache, input_ids, position_ids, all_hidden_states)
        context = {**(block_context or {}), **features_context}
        hidden_states = self.run_layers(*layer_inputs, **context, recorder=recorder)
        hidden_states = self.norm(hidden_states)
        if cache is not None:
            cache.advance(length)
        return ICLModelOutput(
            last_hidden_state=hidden_states,
            cache=cache,
            hidden_states=tuple(all_hidden_states) if output_hidden_states else None,
            attentions=tuple(recorder.attentions) if output_attentions else None,
            aux_losses=recorder.aux_losses,
            states=states,
            state_positions=positions,
        )


class ICLForCausalLM(ICLPreTrainedModel, GenerationMixin):
    """The decoder with a (tied) language-modelling head; works with `generate` and `pipeline`.

    Args:
        config (`ICLConfig`): the architecture's configuration.
    """

    base_model_class = ICLModel
    auto_class_name = "AutoModelForCausalLM"
    _tied_weights_keys = {"lm_head.weight": "model.embed_tokens.weight"}

    def __init__(self, config: ICLConfig):
        if config.input_dim is not None and config.tie_word_embeddings:
            raise ValueError(
                f"input_dim={config.input_dim} leaves no token embedding to tie lm_head to; set "
                "tie_word_embeddings=False, or use ICLForRegression for continuous outputs"
            )
        super().__init__(config)
        self.model = self.base_model_class(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def get_input_embeddings(self):
        return self.model.embed_tokens

    def set_input_embeddings(self, value):
        self.model.embed_tokens = value

    def get_output_embeddings(self):
        return self.lm_head

    def set_output_embeddings(self, value):
        self.lm_head = value

    def generate(self, inputs: torch.Tensor | None = None, *args, **kwargs):
        """`GenerationMixin.generate`; an empty prompt is refused naming the argument (transformers fails deep inside
        on one). Leave the prompt out altogether to start from `bos_token_id`."""
        given = {"inputs": inputs, "input_ids": kwargs.get("input_ids"), "inputs_embeds": kwargs.get("inputs_embeds")}
        for name, prompt in given.items():
            if torch.is_tensor(prompt) and (prompt.numel() == 0 or (prompt.dim() >= 2 and prompt.shape[1] == 0)):
                raise ValueError(
                    f"{name} has shape {tuple(prompt.shape)}: an empty prompt; expected (batch, length >= 1) "
                    "(or no prompt, to start from bos_token_id)"
                )
        return super().generate(inputs, *args, **kwargs)

    @renamed_cache_kwarg
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.LongTensor | None = None,
        cache: ICLCache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        logits_to_keep: int = 0,
        block_context: dict | None = None,
        output_states: bool | list[int] | None = None,
        **kwargs,
    ) -> ICLCausalLMOutput:
        """Next-token logits; `loss` is the token cross-entropy only (the trainer weights and adds `aux_losses`).

        Args:
            output_attentions, block_context, output_states: as in `ICLModel.forward`.
            Other arguments are the usual `transformers` ones; remaining `kwargs` go to the loss function.
        """
        outputs = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            cache=cache,
            inputs_embeds=inputs_embeds,
            use_cache=use_cache,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            block_context=block_context,
            output_states=output_states,
        )
        hidden_states = outputs.last_hidden_state
        if logits_to_keep:
            hidden_states = hidden_states[:, -logits_to_keep:]
        logits = self.lm_head(hidden_states)  # (B, T, V)
        loss = None
        if labels is not None:
            loss = self.loss_function(logits, labels, vocab_size=self.config.vocab_size, **kwargs)
        return ICLCausalLMOutput(
            loss=loss,
            logits=logits,
            cache=outputs.cache,
            hidden_states=outputs.hidden_states,
            attentions=outputs.attentions,
            aux_losses=outputs.aux_losses,
            states=outputs.states,
            state_positions=outputs.state_positions,
        )
