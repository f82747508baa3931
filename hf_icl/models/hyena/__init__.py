from .configuration_hyena import ICLHyenaConfig
from .modeling_hyena import ICLHyenaForCausalLM, ICLHyenaForRegression, ICLHyenaModel

__all__ = ["ICLHyenaConfig", "ICLHyenaForCausalLM", "ICLHyenaForRegression", "ICLHyenaModel"]
