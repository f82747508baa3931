"""`python -m hf_icl.train [...]` (or `accelerate launch -m hf_icl.train [...]`): `train.py` from an installed package.

Same arguments and behaviour as the repository's `train.py`; sweeps (`python -m hf_icl.sweep`) start their runs this
way, so they work wherever hf_icl is installed.
"""

from hf_icl.training import main

if __name__ == "__main__":
    main()
