from .configuration_retnet import ICLRetNetConfig
from .modeling_retnet import ICLRetNetForCausalLM, ICLRetNetModel

__all__ = ["ICLRetNetConfig", "ICLRetNetForCausalLM", "ICLRetNetModel"]
