"""Old import paths kept for one release: each warns with `FutureWarning` and hands over what replaced it.

Two shapes, both used as the whole body of the old module:

- :func:`alias_module`: the old module *is* the new one (``sys.modules`` points the old name at it), so every name,
  private ones included, and every object identity stay as they were;
- :func:`moved_names`: the old module's names now live in several modules; its ``__getattr__`` fetches each one
  from where it moved, on first use.

Modules that left a folder which must not name them any more (the skeleton `hf_icl.modeling` names no block
feature) have no file at the old place: :data:`MOVED_MODULES` lists them, and a finder on `sys.meta_path`
(:func:`install_moved_module_finder`, run by `import hf_icl`) makes each old name an :func:`alias_module`.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from collections.abc import Callable, Mapping
from types import ModuleType

REMOVAL = "the release after next"


def _warn(old: str, new: str) -> None:
    # stacklevel 4: warn -> _warn -> alias_module/moved_names -> the old module's body -> the importing line (the
    # import machinery's own frames are skipped by `warnings`)
    warnings.warn(
        f"{old} is deprecated and will be removed in {REMOVAL}: import {new} instead", FutureWarning, stacklevel=4
    )


def alias_module(old: str, new: str) -> ModuleType:
    """Make module `old` an alias of module `new` (call it from `old`'s body with ``__name__``).

    Args:
        old: the deprecated module's name (its ``__name__``; ``"__main__"`` leaves ``sys.modules`` alone).
        new: the module that replaced it.

    Returns:
        The new module.
    """
    _warn(old, new)
    module = importlib.import_module(new)
    if old != "__main__":
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
    "hf_icl.modeling.ngram_blocks": "hf_icl.block_features.ngram_heads",
    "hf_icl.modeling.slowfast": "hf_icl.block_features.slowfast.slowfast_block",
    "hf_icl.modeling.slow_features": "hf_icl.block_features.slowfast.slow_features",
    "hf_icl.mixers.ops.selective_scan_exp": "hf_icl.mixers.ops.numba_math",
    "hf_icl.training.run_lock": "hf_icl.run_locks",
}
"""Old module -> the module that replaced it, for modules moved without a shim file (removed in `REMOVAL`)."""


class MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old name of :data:`MOVED_MODULES` as :func:`alias_module` of its new module."""

    def find_spec(self, fullname, path=None, target=None):
        return importlib.util.spec_from_loader(fullname, self) if fullname in MOVED_MODULES else None

    def create_module(self, spec):
        return None  # a plain module, which `exec_module` replaces in `sys.modules` by the new one

    def exec_module(self, module) -> None:
        alias_module(module.__name__, MOVED_MODULES[module.__name__])


def install_moved_module_finder() -> None:
    """Put one :class:`MovedModuleFinder` at the end of `sys.meta_path` (after the finders of real files)."""
    if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())
