from .configuration_hyena import ICLHyenaConfig
from .modeling_hyena import ICLHyenaForCausalLM, ICLHyenaModel

__all__ = ["ICLHyenaConfig", "ICLHyenaForCausalLM", "ICLHyenaModel"]
