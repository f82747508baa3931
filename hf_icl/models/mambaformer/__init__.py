from .configuration_mambaformer import ICLMambaFormerConfig
from .modeling_mambaformer import ICLMambaFormerForCausalLM, ICLMambaFormerModel

__all__ = ["ICLMambaFormerConfig", "ICLMambaFormerForCausalLM", "ICLMambaFormerModel"]
