"""Old import paths kept for one release: each warns with `FutureWarning` and hands over what replaced it.

Two shapes, both used as the whole body of the old module:

- :func:`alias_module`: the old module *is* the new one (``sys.modules`` points the old name at it), so every name,
  private ones included, and every object identity stay as they were;
- :func:`moved_names`: the old module's names now live in several modules; its ``__getattr__`` fetches each one
  from where it moved, on first use.
"""

from __future__ import annotations

import importlib
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
