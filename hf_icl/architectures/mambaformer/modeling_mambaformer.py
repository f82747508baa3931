"""`icl_mambaformer` model classes: the shared skeleton configured by `ICLMambaFormerConfig`."""

from ...modeling.decoder import ICLForCausalLM, ICLModel
from ...modeling.regression import ICLForRegression
from .configuration_mambaformer import ICLMambaFormerConfig


class ICLMambaFormerModel(ICLModel):
    """MambaFormer backbone. Args: config (`ICLMambaFormerConfig`)."""

    config_class = ICLMambaFormerConfig


class ICLMambaFormerForCausalLM(ICLForCausalLM):
    """MambaFormer language model. Args: config (`ICLMambaFormerConfig`)."""

    config_class = ICLMambaFormerConfig
    base_model_class = ICLMambaFormerModel


class ICLMambaFormerForRegression(ICLForRegression):
    """MambaFormer with continuous read-in and read-out. Args: config (`ICLMambaFormerConfig`)."""

    config_class = ICLMambaFormerConfig
    base_model_class = ICLMambaFormerModel
