from .configuration_slowfast_transformer import ICLSlowFastTransformerConfig
from .modeling_slowfast_transformer import (
    ICLSlowFastTransformerForCausalLM,
    ICLSlowFastTransformerForRegression,
    ICLSlowFastTransformerModel,
)

__all__ = [
    "ICLSlowFastTransformerConfig",
    "ICLSlowFastTransformerForCausalLM",
    "ICLSlowFastTransformerForRegression",
    "ICLSlowFastTransformerModel",
]
