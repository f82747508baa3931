"""Task registry: every task belongs to one :class:`~hf_icl.tasks.family.TaskFamily`, registered once.

Each task family is one folder here, ``hf_icl/tasks/<family>/``, holding its builder or online sampler, tokenizer,
evaluator, export and spec; its ``__init__`` calls :func:`register_family`. Importing ``hf_icl.tasks`` imports
every such folder (``pkgutil``), so adding a family touches nothing outside its folder, and code outside the package
registers its own families with :func:`register_family`. The modules at this level are the machinery the families
share: the registry (:mod:`.family`), loading (:mod:`.loading`), the builder bases (:mod:`.builder`), online
sampling (:mod:`.online`), objectives, character tokenizers and the text corpus.
"""

from __future__ import annotations

import importlib
import pkgutil

from ..utils.deprecation import moved_names
from .family import (
    FAMILIES,
    EvalRequest,
    TaskData,
    TaskEntry,
    TaskFamily,
    TaskOption,
    TaskRequest,
    family_of,
    list_tasks,
    register_family,
    task_entry,
    unregister_family,
)
from .loading import (
    check_task_options,
    check_task_request,
    load_task,
    load_tokenizer,
    run_task_options,
    task_builder,
    task_config,
    task_family,
    task_option_fields,
)

__all__ = [
    "FAMILIES",
    "EvalRequest",
    "TaskData",
    "TaskEntry",
    "TaskFamily",
    "TaskOption",
    "TaskRequest",
    "check_task_options",
    "check_task_request",
    "family_of",
    "list_tasks",
    "load_task",
    "load_tokenizer",
    "register_family",
    "run_task_options",
    "task_builder",
    "task_config",
    "task_entry",
    "task_family",
    "task_option_fields",
    "unregister_family",
]


def _import_family_folders() -> None:
    """Import every subpackage (in name order); each registers its family or families."""
    for module in pkgutil.iter_modules(__path__):
        if module.ispkg:
            importlib.import_module(f"{__name__}.{module.name}")


_import_family_folders()

_MOVED = {
    "GENERATION_TASKS": "hf_icl.tasks.generation",
    "GenerationTask": "hf_icl.tasks.generation",
    "LANGUAGES": "hf_icl.tasks.formal_language",
    "RegularLanguageBuilder": "hf_icl.tasks.formal_language",
    "RegBenchBuilder": "hf_icl.tasks.regbench",
    "FUNCTION_CLASS_FAMILIES": "hf_icl.tasks.function_classes",
}
"""Family names this package exported before the family folders, with the folder that now does."""
_OLD_MODULES = ("copying", "copying_sampling", "phonebook", "recall", "generative", "regular_languages")


def __getattr__(name: str):
    if name in _OLD_MODULES:  # `hf_icl.tasks.copying` as an attribute: the deprecated alias module
        return importlib.import_module(f"{__name__}.{name}")
    if name in _MOVED:
        return moved_names(f"{__name__}.{name}", {name: _MOVED[name]})(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
