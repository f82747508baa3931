"""`python -m hf_icl.train [...]` (or `accelerate launch -m hf_icl.train [...]`): `train.py` from an installed package.

Same arguments and behaviour as the repository's `train.py`; sweeps (`python -m hf_icl.sweep`) start their runs this
way, so they work wherever hf_icl is installed. As a function, `hf_icl.train(**options)` is :func:`hf_icl.api.train`.
"""

from hf_icl.training import main
from hf_icl.utils.callable_modules import callable_module

if __name__ == "__main__":
    main()
else:
    callable_module(__name__, "hf_icl.api:train")  # `hf_icl.train(**options)`: the Python API (hf_icl.api)
