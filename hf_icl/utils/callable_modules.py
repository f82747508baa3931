"""Modules that are also functions: `hf_icl.train`, `hf_icl.evaluate` and `hf_icl.sweep` are the modules of
`python -m hf_icl.<name>` and the Python API (:mod:`hf_icl.api`), whichever way they were imported.

The function is named by its import path and imported on the first call, so a command module never imports the API
at import time (the API imports the commands).
"""

from __future__ import annotations

import importlib
import sys
import types


class CallableModule(types.ModuleType):
    """A module whose call runs the function its class names (`_target`, `"module:function"`)."""

    _target: str

    def __call__(self, *args, **kwargs):
        module, _, function = type(self)._target.partition(":")
        return getattr(importlib.import_module(module), function)(*args, **kwargs)


def callable_module(name: str, target: str) -> None:
    """Make the imported module `name` callable as the function `target` (`"hf_icl.api:train"`); its docstring and
    attributes stay the module's."""
    module = sys.modules[name]
    module.__class__ = type(f"CallableModule[{target}]", (CallableModule,), {"_target": target})
