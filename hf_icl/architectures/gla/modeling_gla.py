"""`icl_gla` model classes: the shared skeleton configured by `ICLGLAConfig`."""

from ...modeling.decoder import ICLForCausalLM, ICLModel
from ...modeling.regression import ICLForRegression
from .configuration_gla import ICLGLAConfig


class ICLGLAModel(ICLModel):
    """GLA Transformer backbone. Args: config (`ICLGLAConfig`)."""

    config_class = ICLGLAConfig


class ICLGLAForCausalLM(ICLForCausalLM):
    """GLA Transformer language model. Args: config (`ICLGLAConfig`)."""

    config_class = ICLGLAConfig
    base_model_class = ICLGLAModel


class ICLGLAForRegression(ICLForRegression):
    """GLA Transformer with continuous read-in and read-out. Args: config (`ICLGLAConfig`)."""

    config_class = ICLGLAConfig
    base_model_class = ICLGLAModel
