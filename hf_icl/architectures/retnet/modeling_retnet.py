"""`icl_retnet` model classes: the shared skeleton configured by `ICLRetNetConfig`."""

from ...modeling.decoder import ICLForCausalLM, ICLModel
from ...modeling.regression import ICLForRegression
from .configuration_retnet import ICLRetNetConfig


class ICLRetNetModel(ICLModel):
    """RetNet backbone. Args: config (`ICLRetNetConfig`)."""

    config_class = ICLRetNetConfig


class ICLRetNetForCausalLM(ICLForCausalLM):
    """RetNet language model. Args: config (`ICLRetNetConfig`)."""

    config_class = ICLRetNetConfig
    base_model_class = ICLRetNetModel


class ICLRetNetForRegression(ICLForRegression):
    """RetNet with continuous read-in and read-out. Args: config (`ICLRetNetConfig`)."""

    config_class = ICLRetNetConfig
    base_model_class = ICLRetNetModel
