from .configuration_mamba import ICLMambaConfig
from .modeling_mamba import ICLMambaForCausalLM, ICLMambaModel

__all__ = ["ICLMambaConfig", "ICLMambaForCausalLM", "ICLMambaModel"]
