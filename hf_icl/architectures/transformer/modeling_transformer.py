"""`icl_transformer` model classes: the shared skeleton with softmax attention in every layer."""

from ...modeling.decoder import ICLForCausalLM, ICLModel
from ...modeling.regression import ICLForRegression
from .configuration_transformer import ICLTransformerConfig


class ICLTransformerModel(ICLModel):
    """GPT-2 style Transformer backbone. Args: config (`ICLTransformerConfig`)."""

    config_class = ICLTransformerConfig


class ICLTransformerForCausalLM(ICLForCausalLM):
    """GPT-2 style Transformer language model. Args: config (`ICLTransformerConfig`)."""

    config_class = ICLTransformerConfig
    base_model_class = ICLTransformerModel


class ICLTransformerForRegression(ICLForRegression):
    """GPT-2 style Transformer with continuous read-in and read-out. Args: config (`ICLTransformerConfig`)."""

    config_class = ICLTransformerConfig
    base_model_class = ICLTransformerModel
