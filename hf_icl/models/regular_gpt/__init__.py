from .configuration_regular_gpt import ICLRegularGPTConfig
from .modeling_regular_gpt import ICLRegularGPTForCausalLM, ICLRegularGPTModel

__all__ = ["ICLRegularGPTConfig", "ICLRegularGPTForCausalLM", "ICLRegularGPTModel"]
