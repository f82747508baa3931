from .configuration_llama import ICLLlamaConfig
from .modeling_llama import ICLLlamaForCausalLM, ICLLlamaForRegression, ICLLlamaModel

__all__ = ["ICLLlamaConfig", "ICLLlamaForCausalLM", "ICLLlamaForRegression", "ICLLlamaModel"]
