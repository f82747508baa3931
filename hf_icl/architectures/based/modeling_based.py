"""`icl_based` model classes: the shared skeleton configured by `ICLBasedConfig`."""

from ...modeling.decoder import ICLForCausalLM, ICLModel
from ...modeling.regression import ICLForRegression
from .configuration_based import ICLBasedConfig


class ICLBasedModel(ICLModel):
    """Based backbone. Args: config (`ICLBasedConfig`)."""

    config_class = ICLBasedConfig


class ICLBasedForCausalLM(ICLForCausalLM):
    """Based language model. Args: config (`ICLBasedConfig`)."""

    config_class = ICLBasedConfig
    base_model_class = ICLBasedModel


class ICLBasedForRegression(ICLForRegression):
    """Based with continuous read-in and read-out. Args: config (`ICLBasedConfig`)."""

    config_class = ICLBasedConfig
    base_model_class = ICLBasedModel
