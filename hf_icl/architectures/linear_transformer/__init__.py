from ..registry import register_architecture
from .configuration_linear_transformer import ICLLinearTransformerConfig
from .modeling_linear_transformer import (
    ICLLinearTransformerForCausalLM,
    ICLLinearTransformerForRegression,
    ICLLinearTransformerModel,
)

register_architecture(
    "linear_transformer",
    ICLLinearTransformerConfig,
    ICLLinearTransformerModel,
    ICLLinearTransformerForCausalLM,
    ICLLinearTransformerForRegression,
)

__all__ = [
    "ICLLinearTransformerConfig",
    "ICLLinearTransformerForCausalLM",
    "ICLLinearTransformerForRegression",
    "ICLLinearTransformerModel",
]
