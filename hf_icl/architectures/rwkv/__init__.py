from ..registry import register_architecture
from .configuration_rwkv import ICLRWKVConfig
from .modeling_rwkv import ICLRWKVForCausalLM, ICLRWKVForRegression, ICLRWKVModel

register_architecture("rwkv", ICLRWKVConfig, ICLRWKVModel, ICLRWKVForCausalLM, ICLRWKVForRegression)

__all__ = ["ICLRWKVConfig", "ICLRWKVForCausalLM", "ICLRWKVForRegression", "ICLRWKVModel"]
