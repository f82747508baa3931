from ..registry import register_architecture
from .configuration_based import ICLBasedConfig
from .modeling_based import ICLBasedForCausalLM, ICLBasedForRegression, ICLBasedModel

register_architecture("based", ICLBasedConfig, ICLBasedModel, ICLBasedForCausalLM, ICLBasedForRegression)

__all__ = ["ICLBasedConfig", "ICLBasedForCausalLM", "ICLBasedForRegression", "ICLBasedModel"]
