"""`icl_standard_hybrid` model classes: the shared skeleton configured by `ICLStandardHybridConfig`."""

from ...modeling.decoder import ICLForCausalLM, ICLModel
from ...modeling.regression import ICLForRegression
from .configuration_standard_hybrid import ICLStandardHybridConfig


class ICLStandardHybridModel(ICLModel):
    """Standard Hybrid (attention / Mamba) backbone. Args: config (`ICLStandardHybridConfig`)."""

    config_class = ICLStandardHybridConfig


class ICLStandardHybridForCausalLM(ICLForCausalLM):
    """Standard Hybrid (attention / Mamba) language model. Args: config (`ICLStandardHybridConfig`)."""

    config_class = ICLStandardHybridConfig
    base_model_class = ICLStandardHybridModel


class ICLStandardHybridForRegression(ICLForRegression):
    """Standard Hybrid (attention / Mamba) with continuous read-in and read-out.

    Args: config (`ICLStandardHybridConfig`).
    """

    config_class = ICLStandardHybridConfig
    base_model_class = ICLStandardHybridModel
