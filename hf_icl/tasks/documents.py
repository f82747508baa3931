"""The text corpus of the text families (`text_mixture`, `text_lm`): documents as `{name: text}`, mapped into the
character alphabet of printable ASCII and newline, and split by document.

Sources (a config's `source`):
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

import importlib
import inspect
import platform
from pathlib import Path

import datasets

ALPHABET: tuple[str, ...] = tuple(chr(c) for c in range(32, 127)) + ("\n",)
"""Printable ASCII and newline: every document is mapped into these characters (:func:`to_alphabet`)."""
_ALPHABET = frozenset(ALPHABET)

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


def load_documents(config) -> dict[str, str]:
    """`config.source` as `{name: text}` in a fixed order (see the module docstring); `config` is a text family's
    builder config (`source`, `source_config`, `source_split`, `text_column`)."""
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


def documents_version(config) -> str:
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


def split_documents(documents: dict[str, str], split: str) -> list[str]:
    """Names of the documents of `split`: every 10th to test, the one after it to validation, the rest to train."""
    names = sorted(documents)
    index = {"test": 0, "validation": 1}
    return [n for i, n in enumerate(names) if (i % 10 == index[split] if split in index else i % 10 > 1)]
