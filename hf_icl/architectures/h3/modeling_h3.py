"""`icl_h3` model classes: the shared skeleton configured by `ICLH3Config`."""

from ...modeling.decoder import ICLForCausalLM, ICLModel
from ...modeling.regression import ICLForRegression
from .configuration_h3 import ICLH3Config


class ICLH3Model(ICLModel):
    """H3 backbone. Args: config (`ICLH3Config`)."""

    config_class = ICLH3Config


class ICLH3ForCausalLM(ICLForCausalLM):
    """H3 language model. Args: config (`ICLH3Config`)."""

    config_class = ICLH3Config
    base_model_class = ICLH3Model


class ICLH3ForRegression(ICLForRegression):
    """H3 with continuous read-in and read-out. Args: config (`ICLH3Config`)."""

    config_class = ICLH3Config
    base_model_class = ICLH3Model
