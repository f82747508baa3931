"""Deprecated alias of :mod:`hf_icl.tasks.generation.evaluation` (removed in the release after next).

``python -m hf_icl.evaluation.generation_eval RUN/metrics.json ...`` still runs its table command.
"""

from ..utils.deprecation import alias_module

_module = alias_module(__name__, "hf_icl.tasks.generation.evaluation")

if __name__ == "__main__":
    _module.main()
