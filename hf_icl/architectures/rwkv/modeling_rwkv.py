"""`icl_rwkv` model classes: the shared skeleton configured by `ICLRWKVConfig`."""

from ...modeling.decoder import ICLForCausalLM, ICLModel
from ...modeling.regression import ICLForRegression
from .configuration_rwkv import ICLRWKVConfig


class ICLRWKVModel(ICLModel):
    """RWKV-4 backbone. Args: config (`ICLRWKVConfig`)."""

    config_class = ICLRWKVConfig


class ICLRWKVForCausalLM(ICLForCausalLM):
    """RWKV-4 language model. Args: config (`ICLRWKVConfig`)."""

    config_class = ICLRWKVConfig
    base_model_class = ICLRWKVModel


class ICLRWKVForRegression(ICLForRegression):
    """RWKV-4 with continuous read-in and read-out. Args: config (`ICLRWKVConfig`)."""

    config_class = ICLRWKVConfig
    base_model_class = ICLRWKVModel
