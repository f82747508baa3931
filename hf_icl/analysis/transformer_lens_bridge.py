"""TransformerLens on hf_icl models: :func:`transformer_lens_bridge` wraps any hf_icl causal LM in TransformerLens's
`TransformerBridge` (TransformerLens ≥ 3), so `run_with_cache`, `run_with_hooks` and `generate` work on it.

TransformerLens finds a model's layout through an architecture adapter keyed by the class name
(`config.architectures`); hf_icl's classes are not among its adapters, so the bridge registers one adapter for every
hf_icl architecture, built on the shared skeleton rather than on any mixer:

    embed              model.embed_tokens         hook_embed
    blocks.{i}         model.layers[i]            hook_resid_pre / hook_resid_post (hook_in / hook_out)
    blocks.{i}.mixer   model.layers[i].mixer      hook_in / hook_out (the token mixer's input and output)
    ln_final           model.norm
    unembed            lm_head

Blocks are opaque to TransformerLens (`OpaqueBlockBridge`): the model runs its own forward, and the hooks sit on the
residual stream and on each mixer. What needs TransformerLens's own attention layout (`hook_q`, `hook_pattern`,
weight folding with `enable_compatibility_mode`) is not offered: most hf_icl mixers have no queries or attention
pattern to map. Reach those through nnsight's `.source` or `output_attentions` (docs/interpretability.md).

Two TransformerLens behaviours to know: booting switches the model's attention to the eager implementation (so
logits match a plain forward to float rounding, not bit for bit), and a block applied more than once per forward
(RegularGPT's depth levels) fires its hooks at every application, so the cache keeps the last one.
"""

from __future__ import annotations

import functools


@functools.cache
def adapter_class():
    """The TransformerLens architecture adapter of hf_icl's decoder skeleton (built on first use: TransformerLens is
    an optional dependency)."""
    from transformer_lens.model_bridge.architecture_adapter import ArchitectureAdapter
    from transformer_lens.model_bridge.generalized_components import (
        EmbeddingBridge,
        OpaqueBlockBridge,
        UnembeddingBridge,
    )
    from transformer_lens.model_bridge.generalized_components.base import GeneralizedComponent

    class ICLArchitectureAdapter(ArchitectureAdapter):
        """hf_icl's skeleton: embedding, opaque blocks with a `mixer`, final norm, LM head."""

        applicable_phases: list[int] = []  # TransformerLens's verification phases assume its own block layout
        supports_fold_ln = False

        def __init__(self, cfg):
            super().__init__(cfg)
            self.cfg.normalization_type = "LN"
            self.cfg.positional_embedding_type = "standard"
            self.cfg.attn_only = False
            self.cfg.gated_mlp = False
            self.cfg.default_prepend_bos = False  # hf_icl's tokenizers have no BOS
            self.weight_processing_conversions = {}
            self.component_mapping = {
                "embed": EmbeddingBridge(name="model.embed_tokens"),
                "blocks": OpaqueBlockBridge(name="model.layers", submodules={"mixer": GeneralizedComponent("mixer")}),
                "ln_final": GeneralizedComponent(name="model.norm"),
                "unembed": UnembeddingBridge(name="lm_head"),
            }

    return ICLArchitectureAdapter


def transformer_lens_bridge(model, tokenizer, device: str | None = None):
    """Wrap an hf_icl causal LM in a TransformerLens `TransformerBridge`.

    Args:
        model: an hf_icl `...ForCausalLM` (token inputs), loaded or built from a config.
        tokenizer: its tokenizer (`hf_icl.load_tokenizer(task)`, or `AutoTokenizer.from_pretrained(checkpoint)`).
        device: where the bridge runs the model (default: TransformerLens's choice).

    Returns:
        The `TransformerBridge`; `bridge.run_with_cache(input_ids)` returns the logits and an `ActivationCache` with
        `blocks.{i}.hook_resid_post`, `blocks.{i}.mixer.hook_out`, ... (module docstring).

    Raises:
        ValueError: `model` is not an hf_icl causal LM with token inputs.
    """
    from transformer_lens.factories import architecture_adapter_factory
    from transformer_lens.model_bridge import TransformerBridge

    from ..modeling.decoder import ICLForCausalLM

    if not isinstance(model, ICLForCausalLM) or model.model.embed_tokens is None:
        raise ValueError(f"model: {type(model).__name__} is not an hf_icl causal LM with token inputs")
    name = type(model).__name__
    architecture_adapter_factory.ArchitectureAdapterFactory.register_adapter(name, adapter_class())
    # Booting looks the class name up in this table, not in the factory's registrations (TransformerLens 4.3).
    architecture_adapter_factory.SUPPORTED_ARCHITECTURES.setdefault(name, adapter_class())
    model.config.architectures = [name]  # what `save_pretrained` records too
    return TransformerBridge.boot_transformers(
        model.name_or_path or name, hf_model=model, tokenizer=tokenizer, device=device
    )
