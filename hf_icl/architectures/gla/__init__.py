from ..registry import register_architecture
from .configuration_gla import ICLGLAConfig
from .modeling_gla import ICLGLAForCausalLM, ICLGLAForRegression, ICLGLAModel

register_architecture("gla", ICLGLAConfig, ICLGLAModel, ICLGLAForCausalLM, ICLGLAForRegression)

__all__ = ["ICLGLAConfig", "ICLGLAForCausalLM", "ICLGLAForRegression", "ICLGLAModel"]
