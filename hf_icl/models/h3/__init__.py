from .configuration_h3 import ICLH3Config
from .modeling_h3 import ICLH3ForCausalLM, ICLH3ForRegression, ICLH3Model

__all__ = ["ICLH3Config", "ICLH3ForCausalLM", "ICLH3ForRegression", "ICLH3Model"]
