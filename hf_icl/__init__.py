"""hf_icl: a Hugging Face-native toolkit for in-context-learning research.

`import hf_icl` registers every architecture with `AutoConfig`, `AutoModel`, `AutoModelForCausalLM` and
`AutoModelForInContextRegression`.
"""

from .models import ARCHITECTURES, config_for, list_architectures
from .models.auto import AutoModelForInContextRegression
from .tasks import list_tasks, load_task

__all__ = [
    "ARCHITECTURES",
    "AutoModelForInContextRegression",
    "config_for",
    "list_architectures",
    "list_tasks",
    "load_task",
]
__version__ = "0.1.0"
