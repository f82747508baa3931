from .configuration_lstm import ICLLSTMConfig
from .modeling_lstm import ICLLSTMForCausalLM, ICLLSTMForRegression, ICLLSTMModel

__all__ = ["ICLLSTMConfig", "ICLLSTMForCausalLM", "ICLLSTMForRegression", "ICLLSTMModel"]
