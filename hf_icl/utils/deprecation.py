"""Old import paths kept for one release: each warns with `FutureWarning` and hands over what replaced it.

Every old path named here is removed in the release after next (:data:`REMOVAL`). Two shapes:

- a moved module: an entry of :data:`MOVED_MODULES` (old module -> new module), with no file at the old place. A
  finder on `sys.meta_path` (:func:`install_moved_module_finder`, the first thing `import hf_icl` does) imports the
  old name as :func:`alias_module` of the new one: ``sys.modules`` points the old name at the new module, so every
  name, private ones included, and every object identity stay as they were. An entry covers the old module's
  submodules too (``hf_icl.models.<arch>`` is ``hf_icl.architectures.<arch>``), and ``python -m <old name>`` runs
  the new module's command;
- moved names: :func:`moved_names` is a module's ``__getattr__``, fetching each moved name from where it now lives on
  first use. A module that keeps other names calls it in its body (`hf_icl.tasks`, `hf_icl.evaluation.metrics`); a
  module left with no name of its own has no file, but an entry of :data:`MOVED_NAMES` (`hf_icl.tokenization`),
  which the same finder imports as a module whose ``__getattr__`` is :func:`moved_names`.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import runpy
import sys
import warnings
from collections.abc import Callable, Mapping
from types import ModuleType

REMOVAL = "the release after next"


def _warn(old: str, new: str) -> None:
    # stacklevel 4: _warn <- alias_module <- the finder's `exec_module` (or moved_names <- the old module's body or
    # `__getattr__`) <- the importing line (`warnings` skips the import machinery's own frames)
    warnings.warn(
        f"{old} is deprecated and will be removed in {REMOVAL}: import {new} instead", FutureWarning, stacklevel=4
    )


def alias_module(old: str, new: str) -> ModuleType:
    """Make module `old` an alias of module `new` (:class:`MovedModuleFinder` calls it when `old` is imported).

    Args:
        old: the deprecated module's name.
        new: the module that replaced it.

    Returns:
        The new module.
    """
    _warn(old, new)
    module = importlib.import_module(new)
    sys.modules[old] = module
    return module


def moved_names(old: str, names: Mapping[str, str], instead: str | None = None) -> Callable[[str], object]:
    """A module ``__getattr__`` for `old`, whose names moved to other modules.

    Args:
        old: the deprecated module's name.
        names: attribute -> the module that now defines it.
        instead: what the warning tells users to import (default: the modules of `names`).

    Returns:
        ``__getattr__(name)``: the moved object, or ``AttributeError`` naming the module and the name.
    """
    _warn(old, instead or ", ".join(sorted(set(names.values()))))

    def __getattr__(name: str):
        if name not in names:
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        return getattr(importlib.import_module(names[name]), name)

    return __getattr__


MOVED_MODULES: dict[str, str] = {
    # the root's shared helpers, now in `hf_icl.utils`, and its generated pages, now in `hf_icl.pages`
    "hf_icl.atomic_files": "hf_icl.utils.atomic_files",
    "hf_icl.callable_modules": "hf_icl.utils.callable_modules",
    "hf_icl.deprecation": "hf_icl.utils.deprecation",
    "hf_icl.numba_vectors": "hf_icl.utils.numba_vectors",
    "hf_icl.option_help": "hf_icl.utils.option_help",
    "hf_icl.run_locks": "hf_icl.utils.run_locks",
    "hf_icl.strict_yaml": "hf_icl.utils.strict_yaml",
    "hf_icl.validation": "hf_icl.utils.validation",
    "hf_icl.registry_tables": "hf_icl.pages.registry_tables",
    "hf_icl.tasks_page": "hf_icl.pages.tasks_page",
    "hf_icl.training.run_lock": "hf_icl.utils.run_locks",
    # the architecture zoo's former name (its submodules too: `hf_icl.models.<arch>`)
    "hf_icl.models": "hf_icl.architectures",
    # the modules the family folders replaced
    "hf_icl.tasks.copying": "hf_icl.tasks.generation.copying",
    "hf_icl.tasks.copying_sampling": "hf_icl.tasks.generation.copying_sampling",
    "hf_icl.tasks.phonebook": "hf_icl.tasks.generation.phonebook",
    "hf_icl.tasks.recall": "hf_icl.tasks.generation.recall",
    "hf_icl.tasks.generative": "hf_icl.tasks.generation.generative",
    "hf_icl.tasks.regbench_sampling": "hf_icl.tasks.regbench.sampling",
    "hf_icl.tasks.formal_languages": "hf_icl.tasks.formal_language.languages",
    "hf_icl.tasks.regular_languages": "hf_icl.tasks.formal_language.regular_languages",
    "hf_icl.tasks.function_class_data": "hf_icl.tasks.function_classes.function_class_data",
    "hf_icl.evaluation.regbench_eval": "hf_icl.tasks.regbench.evaluation",
    "hf_icl.evaluation.generation_eval": "hf_icl.tasks.generation.evaluation",
    "hf_icl.evaluation.in_context_regression": "hf_icl.tasks.function_classes.evaluation",
    "hf_icl.evaluation.icl_arithmetic_eval": "hf_icl.tasks.icl_arithmetic.evaluation",
    "hf_icl.evaluation.text_lm_eval": "hf_icl.tasks.text_lm.evaluation",
    "hf_icl.evaluation.text_mixture_eval": "hf_icl.tasks.text_mixture.evaluation",
    # shared by the generation and formal-language families since online formal-language training
    "hf_icl.tasks.generation.online_rows": "hf_icl.tasks.online_rows",
    # units that left the skeleton `hf_icl.modeling`, which names no block feature
    "hf_icl.modeling.ngram_blocks": "hf_icl.block_features.ngram_heads",
    "hf_icl.modeling.slowfast": "hf_icl.block_features.slowfast.slowfast_block",
    "hf_icl.modeling.slow_features": "hf_icl.block_features.slowfast.slow_features",
    "hf_icl.mixers.ops.selective_scan_exp": "hf_icl.mixers.ops.numba_math",
}
"""Old module -> the module that replaced it (no file at the old place; removed in :data:`REMOVAL`). An entry
covers the old module's submodules as well: ``old.sub`` is ``new.sub``."""


# `hf_icl.tokenization` (the tokenizers' former home): each name now lives in its family's folder.
_REGBENCH = "hf_icl.tasks.regbench.tokenizer"
_FORMAL = "hf_icl.tasks.formal_language.tokenizer"
_GENERATION = "hf_icl.tasks.generation.tokenizers"
_TOKENIZATION_NAMES = {
    "char_tokenizer": "hf_icl.tasks.char_tokenizer",
    "REGBENCH_SYMBOLS": _REGBENCH,
    "regbench_tokenizer": _REGBENCH,
    "FORMAL_LANGUAGE_SYMBOLS": _FORMAL,
    "formal_language_tokenizer": _FORMAL,
    **dict.fromkeys(
        (
            "COPY_BOS",
            "COPY_SEP",
            "COPY_EOS",
            "COPY_PAD",
            "COPY_SYMBOLS",
            "PHONEBOOK_SYMBOLS",
            "ASSOCIATIVE_RECALL_SYMBOLS",
            "MQAR_FIRST_CODE_POINT",
            "MQAR_MAX_VOCAB",
            "copy_tokenizer",
            "phonebook_tokenizer",
            "associative_recall_tokenizer",
            "mqar_symbols",
            "mqar_tokenizer",
        ),
        _GENERATION,
    ),  # fmt: skip
    "ICL_ARITHMETIC_SYMBOLS": "hf_icl.tasks.icl_arithmetic.tokenizer",
    "icl_arithmetic_tokenizer": "hf_icl.tasks.icl_arithmetic.tokenizer",
    "TEXT_SYMBOLS": "hf_icl.tasks.text_mixture.tokenizer",
    "text_tokenizer": "hf_icl.tasks.text_mixture.tokenizer",
}

MOVED_NAMES: dict[str, tuple[dict[str, str], str]] = {
    "hf_icl.tokenization": (_TOKENIZATION_NAMES, "each name from its family's folder, hf_icl.tasks.<family>"),
}
"""Old module with no file -> (its names -> the module that now defines each, what the warning says to import)."""


def moved_to(name: str) -> str | None:
    """The module that replaced module `name` (an entry of :data:`MOVED_MODULES`, or a submodule of one), or None."""
    old, sub = name, ""
    while old:
        if old in MOVED_MODULES:
            return MOVED_MODULES[old] + sub
        old, dot, last = old.rpartition(".")
        sub = dot + last + sub
    return None


def run_moved_module(old: str) -> None:
    """``python -m <old>``: warn, then run the module that replaced `old` as ``__main__``."""
    new = moved_to(old)
    message = f"{old} is deprecated and will be removed in {REMOVAL}: run python -m {new} instead"
    warnings.warn(message, FutureWarning, stacklevel=2)
    runpy.run_module(new, run_name="__main__", alter_sys=True)


class MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old name of :data:`MOVED_MODULES` (or a submodule of one) as :func:`alias_module` of its new
    module, and gives ``python -m`` (`runpy`) the code that runs the new module."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("hf_icl."):
            return None
        if fullname in MOVED_NAMES:
            return importlib.util.spec_from_loader(fullname, self)
        new = moved_to(fullname)
        if new is None or (fullname not in MOVED_MODULES and importlib.util.find_spec(new) is None):
            return None  # not moved, or a submodule the new package does not have: the usual ModuleNotFoundError
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        return None  # a plain module, which `exec_module` replaces in `sys.modules` by the new one

    def exec_module(self, module) -> None:
        if module.__name__ in MOVED_NAMES:  # a module of moved names: its `__getattr__` fetches each one
            names, instead = MOVED_NAMES[module.__name__]
            module.__getattr__ = moved_names(module.__name__, names, instead)
            module.__all__ = sorted(names)
            return
        alias_module(module.__name__, moved_to(module.__name__))

    def get_code(self, fullname):
        """What ``python -m <old name>`` runs: :func:`run_moved_module`."""
        source = f"from hf_icl.utils.deprecation import run_moved_module\nrun_moved_module({fullname!r})\n"
        return compile(source, f"<moved module {fullname}>", "exec")


def install_moved_module_finder() -> None:
    """Put one :class:`MovedModuleFinder` first on `sys.meta_path`: an old name has no file, but a submodule of an old
    package would otherwise be found by the path finder in the new package's folder and imported a second time,
    under the old name."""
    if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedModuleFinder())
