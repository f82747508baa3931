from ..registry import register_architecture
from .configuration_s4 import ICLS4Config
from .modeling_s4 import ICLS4ForCausalLM, ICLS4ForRegression, ICLS4Model

register_architecture("s4", ICLS4Config, ICLS4Model, ICLS4ForCausalLM, ICLS4ForRegression)

__all__ = ["ICLS4Config", "ICLS4ForCausalLM", "ICLS4ForRegression", "ICLS4Model"]
