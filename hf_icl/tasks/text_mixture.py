"""Text mixture (P3, Learning Fast and Slow, §4.1, §4.3): two excerpts of different documents joined at a cut.

Each row cuts a first document's excerpt at a token position drawn uniformly from [l_start, l_finish], appends an
excerpt of a second document, and truncates the result at l_max tokens (P3: 256, 384, 512). The join happens after
tokenisation; text here is tokenised one character per token (`hf_icl.tokenization.text_tokenizer`), so the cut is
also a character index, stored per row (`cut`) with the two documents' names.

Sources (`source`):
- `stdlib` (default, offline on any machine): one document per module of `STDLIB_MODULES`, made of the docstrings of
  the module and of the public classes, functions and methods it defines, from the running Python's standard library
  (PSF License; the text changes with the Python version, which the card and `documents_version` record);
- a local folder: every `*.txt` file under it is one document;
- any other string: a `datasets.load_dataset` name (`source_config`, `source_split`, `text_column`); each row one
  document.

Documents are split by document (every 10th to test, the next to validation, the rest to train), so no document is
in two splits.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import platform
from pathlib import Path

import datasets
import numpy as np

from ..tokenization import TEXT_SYMBOLS
from .builder import ValidatedBuilder, check_counts, check_range

_VERSION = datasets.Version("1.0.0")  # bump whenever sampling changes
_STREAMS = {"train": 0, "test": 1, "validation": 2}
_ALPHABET = frozenset(TEXT_SYMBOLS[:-1])
STDLIB_MODULES = (
    "argparse asyncio.tasks base64 bisect calendar collections concurrent.futures configparser contextlib copy csv "
    "dataclasses datetime decimal difflib email.message enum fractions ftplib functools gettext glob gzip hashlib "
    "heapq hmac html.parser http.client http.server imaplib inspect ipaddress json logging lzma mailbox mimetypes "
    "multiprocessing.pool numbers operator optparse pathlib pickle pprint queue random re sched secrets selectors "
    "shelve shlex shutil smtplib socket sqlite3 statistics string struct subprocess tarfile tempfile textwrap "
    "threading timeit tokenize traceback typing unittest.case urllib.parse urllib.request uuid warnings wave weakref "
    "xml.dom.minidom zipfile"
).split()
"""Modules whose docstrings make the default corpus: pure-Python modules with substantial documentation."""


def to_alphabet(text: str) -> str:
    """Map `text` into the text tokenizer's alphabet: tabs and other whitespace to spaces, anything else to `?`."""
    return "".join(c if c in _ALPHABET else (" " if c.isspace() else "?") for c in text)


def stdlib_documents(modules=STDLIB_MODULES) -> dict[str, str]:
    """`{module: text}`: the docstrings of each module and of the classes, functions and methods it defines."""
    documents = {}
    for name in modules:
        module = importlib.import_module(name)
        parts = [inspect.getdoc(module) or ""]
        for _, obj in sorted(vars(module).items()):
            if getattr(obj, "__module__", None) != module.__name__ or not (inspect.isclass(obj) or callable(obj)):
                continue
            parts.append(inspect.getdoc(obj) or "")
            if inspect.isclass(obj):
                parts += [inspect.getdoc(m) or "" for _, m in sorted(vars(obj).items()) if inspect.isfunction(m)]
        documents[name] = to_alphabet("\n\n".join(p for p in parts if p))
    return documents


def load_documents(config: TextMixtureConfig) -> dict[str, str]:
    """The config's source as `{name: text}` in a fixed order (see the module docstring)."""
    if config.source == "stdlib":
        return stdlib_documents()
    folder = Path(config.source)
    if folder.is_dir():
        return {
            str(p.relative_to(folder)): to_alphabet(p.read_text(errors="replace"))
            for p in sorted(folder.rglob("*.txt"))
        }
    rows = datasets.load_dataset(config.source, config.source_config, split=config.source_split)
    return {f"{config.source}:{i}": to_alphabet(text) for i, text in enumerate(rows[config.text_column])}


def documents_version(config: TextMixtureConfig) -> str:
    """What the corpus bytes depend on besides the seed: the Python version for `stdlib`, else the source."""
    return f"Python {platform.python_version()} standard library" if config.source == "stdlib" else config.source


def corpus_licence(config) -> str:
    """The licence paragraph of a dataset card for `config.source` (the stdlib corpus is PSF-2.0)."""
    if config.source != "stdlib":
        return f"Source: `{config.source}`."
    return (
        f"The default corpus is the docstrings of {len(STDLIB_MODULES)} modules of the Python standard library "
        "(module, public classes, functions and methods), read from the running interpreter, so it needs no download. "
        "The text is part of the CPython source code, distributed under the **Python Software Foundation License "
        "Version 2** (PSF-2.0, OSI-approved, permissive); this dataset redistributes it under the same licence. The "
        "text depends on the Python version, recorded above."
    )


@dataclasses.dataclass
class TextMixtureConfig(datasets.BuilderConfig):
    """One text-mixture variant.

    Args:
        source: `stdlib`, a folder of `*.txt` files, or a `load_dataset` name.
        source_config, source_split, text_column: for a `load_dataset` source.
        l_start, l_finish: the cut is drawn uniformly from [l_start, l_finish] (tokens of the first excerpt).
        l_max: tokens per row.
        n_train, n_validation, n_test: rows per split.
        seed: the only source of randomness (with the corpus).
    """

    source: str = "stdlib"
    source_config: str | None = None
    source_split: str = "train"
    text_column: str = "text"
    l_start: int = 256
    l_finish: int = 384
    l_max: int = 512
    n_train: int = 5000
    n_validation: int = 200
    n_test: int = 500
    seed: int = 0


CONFIG_FIELDS: tuple[str, ...] = tuple(
    f.name
    for f in dataclasses.fields(TextMixtureConfig)
    if f.name
    in (
        "source",
        "source_config",
        "source_split",
        "text_column",
        "l_start",
        "l_finish",
        "l_max",
        "n_train",
        "n_validation",
        "n_test",
        "seed",
    )
)
"""Keyword overrides accepted by the builder (and ``load_task("text_mixture", ...)``)."""


def validate_config(config: TextMixtureConfig) -> None:
    """Raises ``ValueError`` naming the field, the value and what is allowed."""
    check_counts(config, ("n_train", "n_validation", "n_test", "seed"))
    check_range(config, "l_start", "l_finish", 1)
    if config.l_max <= config.l_finish:
        raise ValueError(f"l_max={config.l_max} is not allowed: must exceed l_finish={config.l_finish}")


def split_documents(documents: dict[str, str], split: str) -> list[str]:
    """Names of the documents of `split`: every 10th to test, the one after it to validation, the rest to train."""
    names = sorted(documents)
    index = {"test": 0, "validation": 1}
    return [n for i, n in enumerate(names) if (i % 10 == index[split] if split in index else i % 10 > 1)]


def sample_mixtures(documents: dict[str, str], names: list[str], config: TextMixtureConfig, count: int, rng):
    """`count` rows: `text` (l_max characters), `cut`, `first`, `second` (document names)."""
    long_enough = [n for n in names if len(documents[n]) >= config.l_max]
    if len(long_enough) < 2:
        raise ValueError(f"the source has {len(long_enough)} documents of ≥ l_max={config.l_max} tokens here; need 2")
    rows = []
    for _ in range(count):
        first, second = rng.choice(len(long_enough), size=2, replace=False)
        cut = int(rng.integers(config.l_start, config.l_finish + 1))
        parts = []
        for name, size in ((long_enough[first], cut), (long_enough[second], config.l_max - cut)):
            text = documents[name]
            start = int(rng.integers(0, len(text) - size + 1))
            parts.append(text[start : start + size])
        rows.append({"text": "".join(parts), "cut": cut, "first": long_enough[first], "second": long_enough[second]})
    return rows


class TextMixtureBuilder(ValidatedBuilder):
    """``datasets`` builder for text mixtures (P3 §4.1). Instantiate it from the package.

    Args:
        config_name: `default` (P3: cut in [256, 384], l_max = 512) or `short` (cut in [48, 80], l_max = 128, for
            CPU runs).
        cache_dir: the ``datasets`` cache directory.
        **config_kwargs: overrides of :class:`TextMixtureConfig` fields.
    """

    VERSION = _VERSION
    BUILDER_CONFIG_CLASS = TextMixtureConfig
    BUILDER_CONFIGS = [
        TextMixtureConfig(name="default", version=_VERSION, description="cut in [256, 384], 512 tokens (P3 §4.1)"),
        TextMixtureConfig(
            name="short",
            version=_VERSION,
            l_start=48,
            l_finish=80,
            l_max=128,
            description="cut in [48, 80], 128 tokens",
        ),
    ]
    DEFAULT_CONFIG_NAME = "default"
    validate_config = staticmethod(validate_config)
    SPLIT_SIZE_FIELDS = ("n_train", "n_validation", "n_test")

    def _info(self) -> datasets.DatasetInfo:
        features = {"text": datasets.Value("string"), "cut": datasets.Value("int32")}
        features |= {"first": datasets.Value("string"), "second": datasets.Value("string")}
        return datasets.DatasetInfo(
            description="Two excerpts of different documents joined at a random cut (P3 §4.1).",
            features=datasets.Features(features),
        )

    def _generate_examples(self, split: str):
        config = self.config
        documents = load_documents(config)
        count = {"train": config.n_train, "validation": config.n_validation, "test": config.n_test}[split]
        rng = np.random.default_rng([config.seed, _STREAMS[split]])
        names = split_documents(documents, split)
        for i, row in enumerate(sample_mixtures(documents, names, config, count, rng)):
            yield datasets.builder.Key(0, i), row
