"""Deprecated alias of `hf_icl.architectures` (the architecture zoo's former name), kept for one release.

`import hf_icl.models`, `from hf_icl.models import ARCHITECTURES` and `from hf_icl.models.<arch> import ...` keep
working and warn; use `hf_icl.architectures` (or the top-level `hf_icl.config_for`, `hf_icl.ARCHITECTURES`).
"""

import sys
import warnings

from . import architectures as _architectures
from .architectures import *  # noqa: F403
from .architectures import __all__  # noqa: F401

warnings.warn(
    "hf_icl.models is deprecated and will be removed in the next release; use hf_icl.architectures",
    FutureWarning,
    stacklevel=2,
)
for _name, _module in list(sys.modules.items()):  # hf_icl.models.<sub> -> hf_icl.architectures.<sub>
    if _name.startswith(_architectures.__name__ + "."):
        sys.modules[__name__ + _name[len(_architectures.__name__) :]] = _module
