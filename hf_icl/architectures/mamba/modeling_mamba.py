"""`icl_mamba` model classes: the shared skeleton configured by `ICLMambaConfig`."""

from ...modeling.decoder import ICLForCausalLM, ICLModel
from ...modeling.regression import ICLForRegression
from .configuration_mamba import ICLMambaConfig


class ICLMambaModel(ICLModel):
    """Mamba backbone. Args: config (`ICLMambaConfig`)."""

    config_class = ICLMambaConfig


class ICLMambaForCausalLM(ICLForCausalLM):
    """Mamba language model. Args: config (`ICLMambaConfig`)."""

    config_class = ICLMambaConfig
    base_model_class = ICLMambaModel


class ICLMambaForRegression(ICLForRegression):
    """Mamba with continuous read-in and read-out. Args: config (`ICLMambaConfig`)."""

    config_class = ICLMambaConfig
    base_model_class = ICLMambaModel
