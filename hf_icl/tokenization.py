"""Deprecated: each family's tokenizer now lives in its folder (``hf_icl.tasks.<family>``), the shared builder in
:mod:`hf_icl.tasks.char_tokenizer`; ``hf_icl.load_tokenizer(task)`` gives any token task's tokenizer. The names
below still resolve, with a `FutureWarning`, until the release after next.
"""

from .utils.deprecation import moved_names

_REGBENCH = "hf_icl.tasks.regbench.tokenizer"
_FORMAL = "hf_icl.tasks.formal_language.tokenizer"
_GENERATION = "hf_icl.tasks.generation.tokenizers"
_NAMES = {
    "char_tokenizer": "hf_icl.tasks.char_tokenizer",
    "REGBENCH_SYMBOLS": _REGBENCH,
    "regbench_tokenizer": _REGBENCH,
    "FORMAL_LANGUAGE_SYMBOLS": _FORMAL,
    "formal_language_tokenizer": _FORMAL,
    **dict.fromkeys(
        (
            "COPY_BOS",
            "COPY_SEP",
            "COPY_EOS",
            "COPY_PAD",
            "COPY_SYMBOLS",
            "PHONEBOOK_SYMBOLS",
            "ASSOCIATIVE_RECALL_SYMBOLS",
            "MQAR_FIRST_CODE_POINT",
            "MQAR_MAX_VOCAB",
            "copy_tokenizer",
            "phonebook_tokenizer",
            "associative_recall_tokenizer",
            "mqar_symbols",
            "mqar_tokenizer",
        ),
        _GENERATION,
    ),  # fmt: skip
    "ICL_ARITHMETIC_SYMBOLS": "hf_icl.tasks.icl_arithmetic.tokenizer",
    "icl_arithmetic_tokenizer": "hf_icl.tasks.icl_arithmetic.tokenizer",
    "TEXT_SYMBOLS": "hf_icl.tasks.text_mixture.tokenizer",
    "text_tokenizer": "hf_icl.tasks.text_mixture.tokenizer",
}

__getattr__ = moved_names(__name__, _NAMES, "each name from its family's folder, hf_icl.tasks.<family>")
__all__ = sorted(_NAMES)
