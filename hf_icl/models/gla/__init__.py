from .configuration_gla import ICLGLAConfig
from .modeling_gla import ICLGLAForCausalLM, ICLGLAModel

__all__ = ["ICLGLAConfig", "ICLGLAForCausalLM", "ICLGLAModel"]
