from .configuration_linear_transformer import ICLLinearTransformerConfig
from .modeling_linear_transformer import (
    ICLLinearTransformerForCausalLM,
    ICLLinearTransformerForRegression,
    ICLLinearTransformerModel,
)

__all__ = [
    "ICLLinearTransformerConfig",
    "ICLLinearTransformerForCausalLM",
    "ICLLinearTransformerForRegression",
    "ICLLinearTransformerModel",
]
