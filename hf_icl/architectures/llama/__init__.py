from ..registry import register_architecture
from .configuration_llama import ICLLlamaConfig
from .modeling_llama import ICLLlamaForCausalLM, ICLLlamaForRegression, ICLLlamaModel

register_architecture("llama", ICLLlamaConfig, ICLLlamaModel, ICLLlamaForCausalLM, ICLLlamaForRegression)

__all__ = ["ICLLlamaConfig", "ICLLlamaForCausalLM", "ICLLlamaForRegression", "ICLLlamaModel"]
