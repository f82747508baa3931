from .configuration_retnet import ICLRetNetConfig
from .modeling_retnet import ICLRetNetForCausalLM, ICLRetNetForRegression, ICLRetNetModel

__all__ = ["ICLRetNetConfig", "ICLRetNetForCausalLM", "ICLRetNetForRegression", "ICLRetNetModel"]
