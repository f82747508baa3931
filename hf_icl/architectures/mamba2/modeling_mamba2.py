"""`icl_mamba2` model classes: the shared skeleton configured by `ICLMamba2Config`."""

from ...modeling.decoder import ICLForCausalLM, ICLModel
from ...modeling.regression import ICLForRegression
from .configuration_mamba2 import ICLMamba2Config


class ICLMamba2Model(ICLModel):
    """Mamba-2 backbone. Args: config (`ICLMamba2Config`)."""

    config_class = ICLMamba2Config


class ICLMamba2ForCausalLM(ICLForCausalLM):
    """Mamba-2 language model. Args: config (`ICLMamba2Config`)."""

    config_class = ICLMamba2Config
    base_model_class = ICLMamba2Model


class ICLMamba2ForRegression(ICLForRegression):
    """Mamba-2 with continuous read-in and read-out. Args: config (`ICLMamba2Config`)."""

    config_class = ICLMamba2Config
    base_model_class = ICLMamba2Model
