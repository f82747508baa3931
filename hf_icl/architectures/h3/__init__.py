from ..registry import register_architecture
from .configuration_h3 import ICLH3Config
from .modeling_h3 import ICLH3ForCausalLM, ICLH3ForRegression, ICLH3Model

register_architecture("h3", ICLH3Config, ICLH3Model, ICLH3ForCausalLM, ICLH3ForRegression)

__all__ = ["ICLH3Config", "ICLH3ForCausalLM", "ICLH3ForRegression", "ICLH3Model"]
