"""`icl_gated_deltanet` model classes: the shared skeleton configured by `ICLGatedDeltaNetConfig`."""

from ...modeling.decoder import ICLForCausalLM, ICLModel
from ...modeling.regression import ICLForRegression
from .configuration_gated_deltanet import ICLGatedDeltaNetConfig


class ICLGatedDeltaNetModel(ICLModel):
    """Gated DeltaNet backbone. Args: config (`ICLGatedDeltaNetConfig`)."""

    config_class = ICLGatedDeltaNetConfig


class ICLGatedDeltaNetForCausalLM(ICLForCausalLM):
    """Gated DeltaNet language model. Args: config (`ICLGatedDeltaNetConfig`)."""

    config_class = ICLGatedDeltaNetConfig
    base_model_class = ICLGatedDeltaNetModel


class ICLGatedDeltaNetForRegression(ICLForRegression):
    """Gated DeltaNet with continuous read-in and read-out. Args: config (`ICLGatedDeltaNetConfig`)."""

    config_class = ICLGatedDeltaNetConfig
    base_model_class = ICLGatedDeltaNetModel
