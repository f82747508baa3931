from ..registry import register_architecture
from .configuration_lstm import ICLLSTMConfig
from .modeling_lstm import ICLLSTMForCausalLM, ICLLSTMForRegression, ICLLSTMModel

register_architecture("lstm", ICLLSTMConfig, ICLLSTMModel, ICLLSTMForCausalLM, ICLLSTMForRegression)

__all__ = ["ICLLSTMConfig", "ICLLSTMForCausalLM", "ICLLSTMForRegression", "ICLLSTMModel"]
