from .configuration_transformer import ICLTransformerConfig
from .modeling_transformer import ICLTransformerForCausalLM, ICLTransformerModel

__all__ = ["ICLTransformerConfig", "ICLTransformerForCausalLM", "ICLTransformerModel"]
