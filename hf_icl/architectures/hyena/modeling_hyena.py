"""`icl_hyena` model classes: the shared skeleton configured by `ICLHyenaConfig`."""

from ...modeling.decoder import ICLForCausalLM, ICLModel
from ...modeling.regression import ICLForRegression
from .configuration_hyena import ICLHyenaConfig


class ICLHyenaModel(ICLModel):
    """Hyena backbone. Args: config (`ICLHyenaConfig`)."""

    config_class = ICLHyenaConfig


class ICLHyenaForCausalLM(ICLForCausalLM):
    """Hyena language model. Args: config (`ICLHyenaConfig`)."""

    config_class = ICLHyenaConfig
    base_model_class = ICLHyenaModel


class ICLHyenaForRegression(ICLForRegression):
    """Hyena with continuous read-in and read-out. Args: config (`ICLHyenaConfig`)."""

    config_class = ICLHyenaConfig
    base_model_class = ICLHyenaModel
