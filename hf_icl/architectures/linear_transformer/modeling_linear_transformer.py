"""`icl_linear_transformer` model classes: the shared skeleton configured by `ICLLinearTransformerConfig`."""

from ...modeling.decoder import ICLForCausalLM, ICLModel
from ...modeling.regression import ICLForRegression
from .configuration_linear_transformer import ICLLinearTransformerConfig


class ICLLinearTransformerModel(ICLModel):
    """Linear Transformer backbone. Args: config (`ICLLinearTransformerConfig`)."""

    config_class = ICLLinearTransformerConfig


class ICLLinearTransformerForCausalLM(ICLForCausalLM):
    """Linear Transformer language model. Args: config (`ICLLinearTransformerConfig`)."""

    config_class = ICLLinearTransformerConfig
    base_model_class = ICLLinearTransformerModel


class ICLLinearTransformerForRegression(ICLForRegression):
    """Linear Transformer with continuous read-in and read-out. Args: config (`ICLLinearTransformerConfig`)."""

    config_class = ICLLinearTransformerConfig
    base_model_class = ICLLinearTransformerModel
