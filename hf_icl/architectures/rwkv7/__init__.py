from ..registry import register_architecture
from .configuration_rwkv7 import ICLRWKV7Config
from .modeling_rwkv7 import ICLRWKV7ForCausalLM, ICLRWKV7ForRegression, ICLRWKV7Model

register_architecture("rwkv7", ICLRWKV7Config, ICLRWKV7Model, ICLRWKV7ForCausalLM, ICLRWKV7ForRegression)

__all__ = ["ICLRWKV7Config", "ICLRWKV7ForCausalLM", "ICLRWKV7ForRegression", "ICLRWKV7Model"]
