from ..registry import register_architecture
from .configuration_mamba2 import ICLMamba2Config
from .modeling_mamba2 import ICLMamba2ForCausalLM, ICLMamba2ForRegression, ICLMamba2Model

register_architecture("mamba2", ICLMamba2Config, ICLMamba2Model, ICLMamba2ForCausalLM, ICLMamba2ForRegression)

__all__ = ["ICLMamba2Config", "ICLMamba2ForCausalLM", "ICLMamba2ForRegression", "ICLMamba2Model"]
