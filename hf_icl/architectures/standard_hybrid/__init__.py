from ..registry import register_architecture
from .configuration_standard_hybrid import ICLStandardHybridConfig
from .modeling_standard_hybrid import (
    ICLStandardHybridForCausalLM,
    ICLStandardHybridForRegression,
    ICLStandardHybridModel,
)

register_architecture(
    "standard_hybrid",
    ICLStandardHybridConfig,
    ICLStandardHybridModel,
    ICLStandardHybridForCausalLM,
    ICLStandardHybridForRegression,
)

__all__ = [
    "ICLStandardHybridConfig",
    "ICLStandardHybridForCausalLM",
    "ICLStandardHybridForRegression",
    "ICLStandardHybridModel",
]
