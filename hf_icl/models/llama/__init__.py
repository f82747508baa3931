from .configuration_llama import ICLLlamaConfig
from .modeling_llama import ICLLlamaForCausalLM, ICLLlamaModel

__all__ = ["ICLLlamaConfig", "ICLLlamaForCausalLM", "ICLLlamaModel"]
