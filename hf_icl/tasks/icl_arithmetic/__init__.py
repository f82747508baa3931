"""ICL arithmetic (P3 §4.1, App. D; DESIGN §5.7.9) as one task family: linear tasks in context.

- :mod:`.icl_arithmetic`: the ``datasets`` builder (fixed evaluation sets), the online sampler, exact answers and the
  least-squares reference; :mod:`.tokenizer`;
- :mod:`.evaluation`: answer-digit accuracy of the last 2 examples of each task, by example index, with the
  least-squares baseline; :mod:`.export`: ``python -m hf_icl.export icl_arithmetic``;
- :mod:`.spec`: the :class:`~hf_icl.tasks.family.TaskFamily`, registered here.
"""

from ..family import register_family
from .icl_arithmetic import (
    A_RANGE,
    B_RANGE,
    CITATION,
    CONFIG_FIELDS,
    EXAMPLE,
    SCORED_EXAMPLES,
    ICLArithmeticBuilder,
    ICLArithmeticConfig,
    ICLArithmeticSampler,
    answer_positions,
    check_row,
    format_example,
    least_squares_predictions,
    sample_rows,
    validate_config,
)
from .spec import FAMILY
from .tokenizer import ICL_ARITHMETIC_SYMBOLS, icl_arithmetic_tokenizer

register_family(FAMILY)

__all__ = [
    "A_RANGE",
    "B_RANGE",
    "CITATION",
    "CONFIG_FIELDS",
    "EXAMPLE",
    "FAMILY",
    "ICL_ARITHMETIC_SYMBOLS",
    "SCORED_EXAMPLES",
    "ICLArithmeticBuilder",
    "ICLArithmeticConfig",
    "ICLArithmeticSampler",
    "answer_positions",
    "check_row",
    "format_example",
    "icl_arithmetic_tokenizer",
    "least_squares_predictions",
    "sample_rows",
    "validate_config",
]
