from .configuration_s4 import ICLS4Config
from .modeling_s4 import ICLS4ForCausalLM, ICLS4ForRegression, ICLS4Model

__all__ = ["ICLS4Config", "ICLS4ForCausalLM", "ICLS4ForRegression", "ICLS4Model"]
