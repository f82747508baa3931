from .configuration_mamba import ICLMambaConfig
from .modeling_mamba import ICLMambaForCausalLM, ICLMambaForRegression, ICLMambaModel

__all__ = ["ICLMambaConfig", "ICLMambaForCausalLM", "ICLMambaForRegression", "ICLMambaModel"]
