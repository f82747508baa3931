"""`icl_lstm` model classes: the shared skeleton configured by `ICLLSTMConfig`."""

from ...modeling.decoder import ICLForCausalLM, ICLModel
from ...modeling.regression import ICLForRegression
from .configuration_lstm import ICLLSTMConfig


class ICLLSTMModel(ICLModel):
    """multi-layer LSTM backbone. Args: config (`ICLLSTMConfig`)."""

    config_class = ICLLSTMConfig


class ICLLSTMForCausalLM(ICLForCausalLM):
    """multi-layer LSTM language model. Args: config (`ICLLSTMConfig`)."""

    config_class = ICLLSTMConfig
    base_model_class = ICLLSTMModel


class ICLLSTMForRegression(ICLForRegression):
    """Multi-layer LSTM with continuous read-in and read-out. Args: config (`ICLLSTMConfig`)."""

    config_class = ICLLSTMConfig
    base_model_class = ICLLSTMModel
