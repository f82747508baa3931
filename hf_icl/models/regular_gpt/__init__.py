from .configuration_regular_gpt import ICLRegularGPTConfig
from .modeling_regular_gpt import ICLRegularGPTForCausalLM, ICLRegularGPTForRegression, ICLRegularGPTModel

__all__ = ["ICLRegularGPTConfig", "ICLRegularGPTForCausalLM", "ICLRegularGPTForRegression", "ICLRegularGPTModel"]
