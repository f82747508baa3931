from ..registry import register_architecture
from .configuration_hyena import ICLHyenaConfig
from .modeling_hyena import ICLHyenaForCausalLM, ICLHyenaForRegression, ICLHyenaModel

register_architecture("hyena", ICLHyenaConfig, ICLHyenaModel, ICLHyenaForCausalLM, ICLHyenaForRegression)

__all__ = ["ICLHyenaConfig", "ICLHyenaForCausalLM", "ICLHyenaForRegression", "ICLHyenaModel"]
