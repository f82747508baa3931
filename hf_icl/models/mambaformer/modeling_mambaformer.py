"""`icl_mambaformer` model classes: the shared skeleton configured by `ICLMambaFormerConfig`."""

from ...modeling.decoder import ICLForCausalLM, ICLModel
from .configuration_mambaformer import ICLMambaFormerConfig


class ICLMambaFormerModel(ICLModel):
    """MambaFormer backbone. Args: config (`ICLMambaFormerConfig`)."""

    config_class = ICLMambaFormerConfig


class ICLMambaFormerForCausalLM(ICLForCausalLM):
    """MambaFormer language model. Args: config (`ICLMambaFormerConfig`)."""

    config_class = ICLMambaFormerConfig
    base_model_class = ICLMambaFormerModel
