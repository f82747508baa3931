from .configuration_rwkv import ICLRWKVConfig
from .modeling_rwkv import ICLRWKVForCausalLM, ICLRWKVModel

__all__ = ["ICLRWKVConfig", "ICLRWKVForCausalLM", "ICLRWKVModel"]
