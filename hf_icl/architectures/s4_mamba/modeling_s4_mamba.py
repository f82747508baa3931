"""`icl_s4_mamba` model classes: the shared skeleton configured by `ICLS4MambaConfig`."""

from ...modeling.decoder import ICLForCausalLM, ICLModel
from ...modeling.regression import ICLForRegression
from .configuration_s4_mamba import ICLS4MambaConfig


class ICLS4MambaModel(ICLModel):
    """S4-Mamba backbone. Args: config (`ICLS4MambaConfig`)."""

    config_class = ICLS4MambaConfig


class ICLS4MambaForCausalLM(ICLForCausalLM):
    """S4-Mamba language model. Args: config (`ICLS4MambaConfig`)."""

    config_class = ICLS4MambaConfig
    base_model_class = ICLS4MambaModel


class ICLS4MambaForRegression(ICLForRegression):
    """S4-Mamba with continuous read-in and read-out. Args: config (`ICLS4MambaConfig`)."""

    config_class = ICLS4MambaConfig
    base_model_class = ICLS4MambaModel
