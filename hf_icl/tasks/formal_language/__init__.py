"""The regular-language suite of RegularGPT (P2 §5.1, Table 1; §5.3) as one task family, ``formal_language``.

- :mod:`.languages`: the transduction labelers and the recognition DFAs with their exact-length samplers;
- :mod:`.regular_languages`: the ``datasets`` builder (one config per language) and the causal-LM text;
- :mod:`.tokenizer`; :mod:`.export`: the Hub-layout export (``python -m hf_icl.export formal_languages``);
- :mod:`.spec`: the :class:`~hf_icl.tasks.family.TaskFamily` (length-sweep evaluation), registered here.
"""

from ..family import register_family
from .languages import RECOGNITION_LANGUAGES, TRANSDUCTION_LANGUAGES
from .regular_languages import (
    CITATION,
    CONFIG_FIELDS,
    LANGUAGES,
    QUERY_SYMBOL,
    RegularLanguageBuilder,
    RegularLanguageConfig,
    causal_lm_example,
    task_fields,
)
from .spec import FAMILY
from .tokenizer import FORMAL_LANGUAGE_SYMBOLS, formal_language_tokenizer

register_family(FAMILY)

__all__ = [
    "CITATION",
    "CONFIG_FIELDS",
    "FAMILY",
    "FORMAL_LANGUAGE_SYMBOLS",
    "LANGUAGES",
    "QUERY_SYMBOL",
    "RECOGNITION_LANGUAGES",
    "TRANSDUCTION_LANGUAGES",
    "RegularLanguageBuilder",
    "RegularLanguageConfig",
    "causal_lm_example",
    "formal_language_tokenizer",
    "task_fields",
]
