"""RegBench (P1 §3): in-context learning of random probabilistic regular languages, as one task family.

- :mod:`.sampling`: automata and strings (DESIGN §5.1); :mod:`.regbench`: the ``datasets`` builder, the exact
  next-token truth (:func:`next_token_truth`, DESIGN §5.2) and split statistics;
- :mod:`.tokenizer`: the reference vocabulary; :mod:`.evaluation`: the model and the in-context n-gram baselines
  on the same rows; :mod:`.export`: the Hub-layout export (``python -m hf_icl.export regbench``);
- :mod:`.spec`: the :class:`~hf_icl.tasks.family.TaskFamily`, registered here.

``hf_icl.tasks.regbench.next_token_truth`` and the builder names below are stable public names.
"""

from ..family import register_family
from .regbench import (
    CITATION,
    CONFIG_FIELDS,
    PAD_ID,
    REGBENCH_VOCAB,
    SEP_ID,
    VOCAB_SIZE,
    RegBenchBuilder,
    RegBenchConfig,
    automaton_states,
    generate_regbench,
    instance_statistics,
    next_token_truth,
    validate_config,
)
from .sampling import SamplingRanges, sample_automata, sample_texts
from .spec import FAMILY
from .tokenizer import REGBENCH_SYMBOLS, regbench_tokenizer

register_family(FAMILY)

__all__ = [
    "CITATION",
    "CONFIG_FIELDS",
    "FAMILY",
    "PAD_ID",
    "REGBENCH_SYMBOLS",
    "REGBENCH_VOCAB",
    "SEP_ID",
    "VOCAB_SIZE",
    "RegBenchBuilder",
    "RegBenchConfig",
    "SamplingRanges",
    "automaton_states",
    "generate_regbench",
    "instance_statistics",
    "next_token_truth",
    "regbench_tokenizer",
    "sample_automata",
    "sample_texts",
    "validate_config",
]
