"""`icl_llama` model classes: the shared skeleton configured by `ICLLlamaConfig`."""

from ...modeling.decoder import ICLForCausalLM, ICLModel
from ...modeling.regression import ICLForRegression
from .configuration_llama import ICLLlamaConfig


class ICLLlamaModel(ICLModel):
    """Llama-style Transformer backbone. Args: config (`ICLLlamaConfig`)."""

    config_class = ICLLlamaConfig


class ICLLlamaForCausalLM(ICLForCausalLM):
    """Llama-style Transformer language model. Args: config (`ICLLlamaConfig`)."""

    config_class = ICLLlamaConfig
    base_model_class = ICLLlamaModel


class ICLLlamaForRegression(ICLForRegression):
    """Llama-style Transformer with continuous read-in and read-out. Args: config (`ICLLlamaConfig`)."""

    config_class = ICLLlamaConfig
    base_model_class = ICLLlamaModel
