from ..registry import register_architecture
from .configuration_transformer import ICLTransformerConfig
from .modeling_transformer import ICLTransformerForCausalLM, ICLTransformerForRegression, ICLTransformerModel

register_architecture(
    "transformer", ICLTransformerConfig, ICLTransformerModel, ICLTransformerForCausalLM, ICLTransformerForRegression
)

__all__ = ["ICLTransformerConfig", "ICLTransformerForCausalLM", "ICLTransformerForRegression", "ICLTransformerModel"]
