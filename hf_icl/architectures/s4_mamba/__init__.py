from ..registry import register_architecture
from .configuration_s4_mamba import ICLS4MambaConfig
from .modeling_s4_mamba import ICLS4MambaForCausalLM, ICLS4MambaForRegression, ICLS4MambaModel

register_architecture("s4_mamba", ICLS4MambaConfig, ICLS4MambaModel, ICLS4MambaForCausalLM, ICLS4MambaForRegression)

__all__ = ["ICLS4MambaConfig", "ICLS4MambaForCausalLM", "ICLS4MambaForRegression", "ICLS4MambaModel"]
