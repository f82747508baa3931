from ..registry import register_architecture
from .configuration_retnet import ICLRetNetConfig
from .modeling_retnet import ICLRetNetForCausalLM, ICLRetNetForRegression, ICLRetNetModel

register_architecture("retnet", ICLRetNetConfig, ICLRetNetModel, ICLRetNetForCausalLM, ICLRetNetForRegression)

__all__ = ["ICLRetNetConfig", "ICLRetNetForCausalLM", "ICLRetNetForRegression", "ICLRetNetModel"]
