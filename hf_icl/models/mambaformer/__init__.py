from .configuration_mambaformer import ICLMambaFormerConfig
from .modeling_mambaformer import ICLMambaFormerForCausalLM, ICLMambaFormerForRegression, ICLMambaFormerModel

__all__ = ["ICLMambaFormerConfig", "ICLMambaFormerForCausalLM", "ICLMambaFormerForRegression", "ICLMambaFormerModel"]
