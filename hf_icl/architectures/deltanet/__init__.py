from ..registry import register_architecture
from .configuration_deltanet import ICLDeltaNetConfig
from .modeling_deltanet import ICLDeltaNetForCausalLM, ICLDeltaNetForRegression, ICLDeltaNetModel

register_architecture("deltanet", ICLDeltaNetConfig, ICLDeltaNetModel, ICLDeltaNetForCausalLM, ICLDeltaNetForRegression)

__all__ = ["ICLDeltaNetConfig", "ICLDeltaNetForCausalLM", "ICLDeltaNetForRegression", "ICLDeltaNetModel"]
