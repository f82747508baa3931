"""hf_icl: a Hugging Face-native toolkit for in-context-learning research.

`import hf_icl` registers every mixer, architecture (with `AutoConfig`, `AutoModel`, `AutoModelForCausalLM` and
`AutoModelForInContextRegression`) and task family, then loads the plug-ins of the `hf_icl.plugins` entry-point
group of every installed distribution (a `--help` or `sweep --dry-run` process of an hf_icl command defers them
until it needs one: :mod:`hf_icl.plugins`).

Python API (mirroring the commands): `hf_icl.train(**options) -> Run`, `hf_icl.evaluate(checkpoint, task, ...)`,
`hf_icl.sweep(spec)` (:mod:`hf_icl.api`; each is also the module of `python -m hf_icl.<name>`).

Extending: `register_mixer` (a token mixer and the config fields it reads), `register_architecture` (a config class
and its model shells), `register_family` (a family of tasks); `docs/architecture.md` has the recipes.
"""

from .utils import numba_vectors as _numba_vectors  # noqa: F401  (first, before any numba import: 512-bit SIMD)
from .utils.deprecation import install_moved_module_finder

install_moved_module_finder()  # before anything could import an old module path (`utils.deprecation.MOVED_MODULES`)

from .api import Run  # noqa: E402
from .architectures import ARCHITECTURES, config_for, list_architectures, register_architecture  # noqa: E402
from .architectures.auto import AutoModelForInContextRegression  # noqa: E402
from .mixers import register_mixer  # noqa: E402
from .tasks import list_tasks, load_task, load_tokenizer, register_family  # noqa: E402

__all__ = [
    "ARCHITECTURES",
    "AutoModelForInContextRegression",
    "Run",
    "config_for",
    "list_architectures",
    "list_tasks",
    "load_task",
    "load_tokenizer",
    "register_architecture",
    "register_family",
    "register_mixer",
    "evaluate",
    "sweep",
    "train",
]
_API_MODULES = ("train", "evaluate", "sweep")


def __getattr__(name: str):
    """`hf_icl.train`, `hf_icl.evaluate`, `hf_icl.sweep`: imported on first use (each a callable module, hf_icl.api)."""
    if name in _API_MODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__version__ = "0.1.0"

from .plugins import load_installed_plugins, process_describes_only  # noqa: E402  (after the registries exist)

load_installed_plugins(defer=process_describes_only())  # `train.py --help` runs no plug-in code it does not need
