"""`icl_rwkv7` model classes: the shared skeleton configured by `ICLRWKV7Config`."""

from ...modeling.decoder import ICLForCausalLM, ICLModel
from ...modeling.regression import ICLForRegression
from .configuration_rwkv7 import ICLRWKV7Config


class ICLRWKV7Model(ICLModel):
    """RWKV-7 backbone. Args: config (`ICLRWKV7Config`)."""

    config_class = ICLRWKV7Config


class ICLRWKV7ForCausalLM(ICLForCausalLM):
    """RWKV-7 language model. Args: config (`ICLRWKV7Config`)."""

    config_class = ICLRWKV7Config
    base_model_class = ICLRWKV7Model


class ICLRWKV7ForRegression(ICLForRegression):
    """RWKV-7 with continuous read-in and read-out. Args: config (`ICLRWKV7Config`)."""

    config_class = ICLRWKV7Config
    base_model_class = ICLRWKV7Model
