from .configuration_s4_mamba import ICLS4MambaConfig
from .modeling_s4_mamba import ICLS4MambaForCausalLM, ICLS4MambaForRegression, ICLS4MambaModel

__all__ = ["ICLS4MambaConfig", "ICLS4MambaForCausalLM", "ICLS4MambaForRegression", "ICLS4MambaModel"]
