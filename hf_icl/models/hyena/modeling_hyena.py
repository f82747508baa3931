"""`icl_hyena` model classes: the shared skeleton configured by `ICLHyenaConfig`."""

from ...modeling.decoder import ICLForCausalLM, ICLModel
from .configuration_hyena import ICLHyenaConfig


class ICLHyenaModel(ICLModel):
    """Hyena backbone. Args: config (`ICLHyenaConfig`)."""

    config_class = ICLHyenaConfig


class ICLHyenaForCausalLM(ICLForCausalLM):
    """Hyena language model. Args: config (`ICLHyenaConfig`)."""

    config_class = ICLHyenaConfig
    base_model_class = ICLHyenaModel
