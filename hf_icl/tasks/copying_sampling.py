"""Deprecated alias of :mod:`hf_icl.tasks.generation.copying_sampling` (removed in the release after next)."""

from ..utils.deprecation import alias_module

alias_module(__name__, "hf_icl.tasks.generation.copying_sampling")
