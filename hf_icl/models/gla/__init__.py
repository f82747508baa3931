from .configuration_gla import ICLGLAConfig
from .modeling_gla import ICLGLAForCausalLM, ICLGLAForRegression, ICLGLAModel

__all__ = ["ICLGLAConfig", "ICLGLAForCausalLM", "ICLGLAForRegression", "ICLGLAModel"]
