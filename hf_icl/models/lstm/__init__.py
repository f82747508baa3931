from .configuration_lstm import ICLLSTMConfig
from .modeling_lstm import ICLLSTMForCausalLM, ICLLSTMModel

__all__ = ["ICLLSTMConfig", "ICLLSTMForCausalLM", "ICLLSTMModel"]
