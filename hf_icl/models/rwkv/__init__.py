from .configuration_rwkv import ICLRWKVConfig
from .modeling_rwkv import ICLRWKVForCausalLM, ICLRWKVForRegression, ICLRWKVModel

__all__ = ["ICLRWKVConfig", "ICLRWKVForCausalLM", "ICLRWKVForRegression", "ICLRWKVModel"]
