"""Architecture registry: every architecture is a config class plus thin model shells, registered with Auto*.

`ARCHITECTURES` maps the public architecture name (as used by `train.py --architecture`) to its classes.
"""

from __future__ import annotations

from dataclasses import fields

from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

from ..modeling.configuration import ICLConfig, check_choice
from .gla import ICLGLAConfig, ICLGLAForCausalLM, ICLGLAModel
from .h3 import ICLH3Config, ICLH3ForCausalLM, ICLH3Model
from .hyena import ICLHyenaConfig, ICLHyenaForCausalLM, ICLHyenaModel
from .linear_transformer import ICLLinearTransformerConfig, ICLLinearTransformerForCausalLM, ICLLinearTransformerModel
from .llama import ICLLlamaConfig, ICLLlamaForCausalLM, ICLLlamaModel
from .lstm import ICLLSTMConfig, ICLLSTMForCausalLM, ICLLSTMModel
from .mamba import ICLMambaConfig, ICLMambaForCausalLM, ICLMambaModel
from .mambaformer import ICLMambaFormerConfig, ICLMambaFormerForCausalLM, ICLMambaFormerModel
from .regular_gpt import ICLRegularGPTConfig, ICLRegularGPTForCausalLM, ICLRegularGPTModel
from .retnet import ICLRetNetConfig, ICLRetNetForCausalLM, ICLRetNetModel
from .rwkv import ICLRWKVConfig, ICLRWKVForCausalLM, ICLRWKVModel
from .s4 import ICLS4Config, ICLS4ForCausalLM, ICLS4Model
from .s4_mamba import ICLS4MambaConfig, ICLS4MambaForCausalLM, ICLS4MambaModel
from .standard_hybrid import ICLStandardHybridConfig, ICLStandardHybridForCausalLM, ICLStandardHybridModel
from .transformer import ICLTransformerConfig, ICLTransformerForCausalLM, ICLTransformerModel

ARCHITECTURES = {
    "transformer": (ICLTransformerConfig, ICLTransformerModel, ICLTransformerForCausalLM),
    "regular_gpt": (ICLRegularGPTConfig, ICLRegularGPTModel, ICLRegularGPTForCausalLM),
    "llama": (ICLLlamaConfig, ICLLlamaModel, ICLLlamaForCausalLM),
    "linear_transformer": (ICLLinearTransformerConfig, ICLLinearTransformerModel, ICLLinearTransformerForCausalLM),
    "retnet": (ICLRetNetConfig, ICLRetNetModel, ICLRetNetForCausalLM),
    "gla": (ICLGLAConfig, ICLGLAModel, ICLGLAForCausalLM),
    "lstm": (ICLLSTMConfig, ICLLSTMModel, ICLLSTMForCausalLM),
    "rwkv": (ICLRWKVConfig, ICLRWKVModel, ICLRWKVForCausalLM),
    "s4": (ICLS4Config, ICLS4Model, ICLS4ForCausalLM),
    "h3": (ICLH3Config, ICLH3Model, ICLH3ForCausalLM),
    "hyena": (ICLHyenaConfig, ICLHyenaModel, ICLHyenaForCausalLM),
    "mamba": (ICLMambaConfig, ICLMambaModel, ICLMambaForCausalLM),
    "mambaformer": (ICLMambaFormerConfig, ICLMambaFormerModel, ICLMambaFormerForCausalLM),
    "standard_hybrid": (ICLStandardHybridConfig, ICLStandardHybridModel, ICLStandardHybridForCausalLM),
    "s4_mamba": (ICLS4MambaConfig, ICLS4MambaModel, ICLS4MambaForCausalLM),
}


def _register() -> None:
    for config_cls, model_cls, lm_cls in ARCHITECTURES.values():
        AutoConfig.register(config_cls.model_type, config_cls)
        AutoModel.register(config_cls, model_cls)
        AutoModelForCausalLM.register(config_cls, lm_cls)


_register()


def list_architectures() -> list[str]:
    """Names accepted by `config_for` and `train.py --architecture`."""
    return sorted(ARCHITECTURES)


def config_for(architecture: str, preset: str = "tiny", **overrides) -> ICLConfig:
    """Build the config of `architecture` at a size `preset`, with field overrides (e.g. `vocab_size=20`).

    Args:
        architecture (`str`): one of `list_architectures()`.
        preset (`str`): a size preset of that architecture (`tiny`, `small`, `base`, ...).
        **overrides: config fields; unknown names raise `ValueError` listing the valid ones.
    """
    check_choice("architecture", architecture, list_architectures())
    config_cls = ARCHITECTURES[architecture][0]
    known = {f.name for f in fields(config_cls)}
    for key in overrides:
        if key not in known:
            allowed = ", ".join(sorted(known))
            raise ValueError(f"config field {key!r} is not a field of {config_cls.__name__}: {allowed}")
    return config_cls.from_preset(preset, **overrides)


def non_embedding_parameters(model) -> int:
    """Parameters outside the token/position embeddings and the output projection (the size presets match this)."""
    skipped = ("embed_tokens", "embed_positions", "lm_head")
    return sum(p.numel() for name, p in model.named_parameters() if not any(part in name for part in skipped))
