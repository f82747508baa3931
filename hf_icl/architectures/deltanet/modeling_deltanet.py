"""`icl_deltanet` model classes: the shared skeleton configured by `ICLDeltaNetConfig`."""

from ...modeling.decoder import ICLForCausalLM, ICLModel
from ...modeling.regression import ICLForRegression
from .configuration_deltanet import ICLDeltaNetConfig


class ICLDeltaNetModel(ICLModel):
    """DeltaNet backbone. Args: config (`ICLDeltaNetConfig`)."""

    config_class = ICLDeltaNetConfig


class ICLDeltaNetForCausalLM(ICLForCausalLM):
    """DeltaNet language model. Args: config (`ICLDeltaNetConfig`)."""

    config_class = ICLDeltaNetConfig
    base_model_class = ICLDeltaNetModel


class ICLDeltaNetForRegression(ICLForRegression):
    """DeltaNet with continuous read-in and read-out. Args: config (`ICLDeltaNetConfig`)."""

    config_class = ICLDeltaNetConfig
    base_model_class = ICLDeltaNetModel
