from ..registry import register_architecture
from .configuration_mambaformer import ICLMambaFormerConfig
from .modeling_mambaformer import ICLMambaFormerForCausalLM, ICLMambaFormerForRegression, ICLMambaFormerModel

register_architecture(
    "mambaformer", ICLMambaFormerConfig, ICLMambaFormerModel, ICLMambaFormerForCausalLM, ICLMambaFormerForRegression
)

__all__ = ["ICLMambaFormerConfig", "ICLMambaFormerForCausalLM", "ICLMambaFormerForRegression", "ICLMambaFormerModel"]
