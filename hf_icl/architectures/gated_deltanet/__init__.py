from ..registry import register_architecture
from .configuration_gated_deltanet import ICLGatedDeltaNetConfig
from .modeling_gated_deltanet import ICLGatedDeltaNetForCausalLM, ICLGatedDeltaNetForRegression, ICLGatedDeltaNetModel

register_architecture(
    "gated_deltanet",
    ICLGatedDeltaNetConfig,
    ICLGatedDeltaNetModel,
    ICLGatedDeltaNetForCausalLM,
    ICLGatedDeltaNetForRegression,
)

__all__ = [
    "ICLGatedDeltaNetConfig",
    "ICLGatedDeltaNetForCausalLM",
    "ICLGatedDeltaNetForRegression",
    "ICLGatedDeltaNetModel",
]
