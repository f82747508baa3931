"""hf_icl: a Hugging Face-native toolkit for in-context-learning research.

`import hf_icl` registers every architecture with `AutoConfig`, `AutoModel` and `AutoModelForCausalLM`.
"""

from .models import ARCHITECTURES, config_for, list_architectures
from .tasks import list_tasks, load_task

__all__ = ["ARCHITECTURES", "config_for", "list_architectures", "list_tasks", "load_task"]
__version__ = "0.1.0"
