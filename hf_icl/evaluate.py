"""`python -m hf_icl.evaluate --checkpoint DIR --task NAME [...]`: the stable name (DESIGN §2.5) of the evaluation
command, which lives in :mod:`hf_icl.evaluation.__main__` (``python -m hf_icl.evaluation``). As a function,
`hf_icl.evaluate(checkpoint, task, **options)` is :func:`hf_icl.api.evaluate`.
"""

import sys

from .evaluation.__main__ import (  # noqa: F401  (the command's names, as before it moved)
    EVALUATE_LIMITS,
    build_parser,
    check_arguments,
    check_task_options,
    main,
    task_request_of,
)

if __name__ == "__main__":
    sys.exit(0 if main() else 1)
else:
    from .utils.callable_modules import callable_module

    callable_module(__name__, "hf_icl.api:evaluate")  # `hf_icl.evaluate(checkpoint, task, ...)`: the Python API
