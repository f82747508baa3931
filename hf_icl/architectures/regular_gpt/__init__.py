from ..registry import register_architecture
from .configuration_regular_gpt import ICLRegularGPTConfig
from .modeling_regular_gpt import ICLRegularGPTForCausalLM, ICLRegularGPTForRegression, ICLRegularGPTModel

register_architecture(
    "regular_gpt", ICLRegularGPTConfig, ICLRegularGPTModel, ICLRegularGPTForCausalLM, ICLRegularGPTForRegression
)

__all__ = ["ICLRegularGPTConfig", "ICLRegularGPTForCausalLM", "ICLRegularGPTForRegression", "ICLRegularGPTModel"]
