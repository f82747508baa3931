from ..registry import register_architecture
from .configuration_mamba import ICLMambaConfig
from .modeling_mamba import ICLMambaForCausalLM, ICLMambaForRegression, ICLMambaModel

register_architecture("mamba", ICLMambaConfig, ICLMambaModel, ICLMambaForCausalLM, ICLMambaForRegression)

__all__ = ["ICLMambaConfig", "ICLMambaForCausalLM", "ICLMambaForRegression", "ICLMambaModel"]
