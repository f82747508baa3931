from .configuration_transformer import ICLTransformerConfig
from .modeling_transformer import ICLTransformerForCausalLM, ICLTransformerForRegression, ICLTransformerModel

__all__ = ["ICLTransformerConfig", "ICLTransformerForCausalLM", "ICLTransformerForRegression", "ICLTransformerModel"]
