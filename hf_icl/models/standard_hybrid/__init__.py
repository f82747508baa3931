from .configuration_standard_hybrid import ICLStandardHybridConfig
from .modeling_standard_hybrid import (
    ICLStandardHybridForCausalLM,
    ICLStandardHybridForRegression,
    ICLStandardHybridModel,
)

__all__ = [
    "ICLStandardHybridConfig",
    "ICLStandardHybridForCausalLM",
    "ICLStandardHybridForRegression",
    "ICLStandardHybridModel",
]
