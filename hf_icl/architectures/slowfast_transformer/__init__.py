from ..registry import register_architecture
from .configuration_slowfast_transformer import ICLSlowFastTransformerConfig
from .modeling_slowfast_transformer import (
    ICLSlowFastTransformerForCausalLM,
    ICLSlowFastTransformerForRegression,
    ICLSlowFastTransformerModel,
)

register_architecture(
    "slowfast_transformer",
    ICLSlowFastTransformerConfig,
    ICLSlowFastTransformerModel,
    ICLSlowFastTransformerForCausalLM,
    ICLSlowFastTransformerForRegression,
)

__all__ = [
    "ICLSlowFastTransformerConfig",
    "ICLSlowFastTransformerForCausalLM",
    "ICLSlowFastTransformerForRegression",
    "ICLSlowFastTransformerModel",
]
