"""`icl_s4` model classes: the shared skeleton configured by `ICLS4Config`."""

from ...modeling.decoder import ICLForCausalLM, ICLModel
from ...modeling.regression import ICLForRegression
from .configuration_s4 import ICLS4Config


class ICLS4Model(ICLModel):
    """S4D backbone. Args: config (`ICLS4Config`)."""

    config_class = ICLS4Config


class ICLS4ForCausalLM(ICLForCausalLM):
    """S4D language model. Args: config (`ICLS4Config`)."""

    config_class = ICLS4Config
    base_model_class = ICLS4Model


class ICLS4ForRegression(ICLForRegression):
    """S4D with continuous read-in and read-out. Args: config (`ICLS4Config`)."""

    config_class = ICLS4Config
    base_model_class = ICLS4Model
