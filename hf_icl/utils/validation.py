"""The one validation layer of every command: values are checked against what their field declares, before any work.

- :class:`Limit` declares the allowed range of a numeric argument (`Limit(float, low=0, low_open=True)`: a finite
  number > 0); :func:`check_limits` applies a table of them to parsed arguments, whatever their source (command
  line, `--config` file, a task family's defaults).
- :func:`check_field_values` checks values against the annotations of a dataclass (a `datasets` builder config,
  a model config), so `n_test='abc'` fails as "expected an integer" instead of deep inside generation.
- :class:`CommandLineParser` is the `argparse` parser of `train.py`, `python -m hf_icl.evaluate` and the dataset
  scripts: a bad value exits with status 2 and one line, `<prog>: error: argument --flag: field=value is not allowed:
  expected ...`, and no traceback; :func:`naming` puts the right flag in front of a library's `ValueError`.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import math
import numbers
import re
import sys
import types
import typing
from collections.abc import Mapping
from contextlib import contextmanager

_PROGRAM_NAMES: dict[str, str] = {}
"""Program-name prefixes :class:`CommandLineParser` rewrites while :func:`renamed_programs` is active."""

SEED_MAX = 2**32 - 1  # numpy's legacy seeding (accelerate's `set_seed`) takes seeds in [0, 2**32)


def flag_of(field: str) -> str:
    """`"n_train"` -> `"--n-train"`: the command-line flag of a field."""
    return "--" + field.replace("_", "-")


def one_line(text: str) -> str:
    """`text` with its line breaks joined by spaces (an error message is one line)."""
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())


@dataclasses.dataclass(frozen=True)
class Limit:
    """The allowed values of a numeric argument.

    Args:
        kind: `int` or `float` (a float argument also takes integers; never booleans, NaN or infinities).
        low, high: inclusive bounds (`None`: unbounded).
        low_open, high_open: make that bound exclusive.
        optional: `None` is allowed (the argument was not given).
    """

    kind: type
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    optional: bool = False

    def describe(self) -> str:
        """What is allowed, e.g. "an integer >= 1" or "a finite number in [0, 1)"."""
        noun = "an integer" if self.kind is int else "a finite number"
        low, high = (f"{bound:g}" if isinstance(bound, float) else str(bound) for bound in (self.low, self.high))
        if self.low is not None and self.high is not None:
            left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
            text = f"{noun} in {left}{low}, {high}{right}"
        elif self.low is not None:
            text = f"{noun} {'>' if self.low_open else '>='} {low}"
        elif self.high is not None:
            text = f"{noun} {'<' if self.high_open else '<='} {high}"
        else:
            text = noun
        return text + (" (or unset)" if self.optional else "")

    def allows(self, value) -> bool:
        if value is None:
            return self.optional
        if not is_of_type(value, self.kind):
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or (value < self.high if self.high_open else value <= self.high)

    def check(self, field: str, value, flag: str | None = None) -> None:
        """Raises `ValueError("argument --flag: field=value is not allowed: expected ...")` for a bad value."""
        if not self.allows(value):
            raise ValueError(f"argument {flag or flag_of(field)}: {field}={value!r} is not allowed: "
                             f"expected {self.describe()}")


POSITIVE_INT = Limit(int, low=1)
OPTIONAL_POSITIVE_INT = Limit(int, low=1, optional=True)
SEED = Limit(int, low=0, high=SEED_MAX)
POSITIVE_NUMBER = Limit(float, low=0, low_open=True)
NON_NEGATIVE_NUMBER = Limit(float, low=0)
FRACTION = Limit(float, low=0, high=1, high_open=True)  # a share or an Adam β: [0, 1)


def check_limits(values, limits: Mapping[str, Limit], flags: Mapping[str, str] | None = None) -> None:
    """Apply a table of limits to the fields of `values` (an object or a mapping); the first bad one raises.

    Args:
        values: parsed arguments (a dataclass, an `argparse.Namespace` or a dict).
        limits: field name -> its :class:`Limit`.
        flags: field name -> the flag to name in the message (default: :func:`flag_of`).
    """
    get = values.get if isinstance(values, Mapping) else lambda name: getattr(values, name)
    for field, limit in limits.items():
        limit.check(field, get(field), (flags or {}).get(field))


def is_of_type(value, annotation) -> bool:
    """Whether `value` fits a (simple) type annotation: `int`, `float`, `bool`, `str`, `list[...]`, `X | None`, ...

    Integers are numbers but booleans are not; a float must be finite. Annotations it does not understand accept.
    """
    origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(is_of_type(value, option) for option in arguments)
    if annotation is type(None) or annotation is None:
        return value is None
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if annotation is float:
        return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
    if annotation is str:
        return isinstance(value, str)
    container = origin or annotation
    if container in (list, tuple):
        return isinstance(value, (list, tuple)) and (
            not arguments or arguments[-1] is Ellipsis or all(is_of_type(v, arguments[0]) for v in value)
        )
    if container is dict:
        return isinstance(value, dict)
    return True


def describe_type(annotation) -> str:
    """`int | None` -> "an integer or null" (for messages)."""
    origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(describe_type(option) for option in arguments)
    names = {int: "an integer", float: "a finite number", bool: "true or false", str: "a string",
             type(None): "null", dict: "a mapping"}
    if annotation in names:
        return names[annotation]
    if (origin or annotation) in (list, tuple):
        return f"a list of {describe_type(arguments[0]).split(' ', 1)[-1]}s" if arguments else "a list"
    return str(annotation)


@functools.cache
def field_types(cls) -> dict[str, object]:
    """Field name -> resolved annotation of a dataclass (its own and its bases'); unresolvable ones are left out."""
    found: dict[str, object] = {}
    for klass in reversed(cls.__mro__):
        namespace = vars(sys.modules.get(klass.__module__, typing))
        for name, annotation in vars(klass).get("__annotations__", {}).items():
            if isinstance(annotation, str):
                try:
                    annotation = eval(annotation, dict(namespace))  # noqa: S307 (the class's own annotation)
                except Exception:  # a forward reference this check does not need
                    found.pop(name, None)
                    continue
            found[name] = annotation
    return found


def check_field_values(cls, values: Mapping, what: str | None = None) -> None:
    """Raises `ValueError` naming the field, the value and the declared type, for a value its field does not accept.

    Fields without a resolvable annotation, and names that are not fields, are left to the caller.

    Args:
        cls: a dataclass (a builder config class, a model config class, `RunArguments`, ...).
        values: field name -> value.
        what: prefix of the message (e.g. "argument --task-option:").
    """
    declared = field_types(cls)
    for name, value in values.items():
        if name in declared and not is_of_type(value, declared[name]):
            prefix = f"{what} " if what else ""
            raise ValueError(f"{prefix}{name}={value!r} is not allowed: expected {describe_type(declared[name])}")


def check_output_folder(path, flag: str) -> None:
    """Raises `ValueError` naming `flag` when `path` is a file or cannot be created: an enclosing path is a file, or
    the nearest existing folder is not writable. Nothing is created.

    Args:
        path: the folder a command will write into (it may not exist yet).
        flag: the option that names it.
    """
    import os
    from pathlib import Path

    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"argument {flag}: {str(path)!r} is a file, not a folder")
    existing = next(p for p in (path, *path.absolute().parents) if p.exists() or p == Path(p.anchor))
    if not existing.is_dir():
        raise ValueError(f"argument {flag}: {str(path)!r} cannot be created: {str(existing)!r} is a file")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(
            f"argument {flag}: {str(path)!r} cannot be created: no permission to write in {str(existing)!r}"
        )


@contextmanager
def naming(flag: str, fields: Mapping[str, str] | None = None):
    """Re-raise a `ValueError` from the block as "argument <flag>: <message>" (unless it names an argument already).

    Args:
        flag: the flag whose value the block checks.
        fields: field name -> flag, for checks of several flags at once: the field whose value the message names
            first (`name=...` or `name[...]`) picks the flag (e.g. a builder's "n_train=0 ..." -> `--n-train`).
    """
    try:
        yield
    except ValueError as err:
        message = one_line(str(err))
        if message.startswith("argument "):
            raise
        named = {_value_position(message, name): f for name, f in (fields or {}).items()}
        named.pop(None, None)
        raise ValueError(f"argument {named[min(named)] if named else flag}: {message}") from None


def _value_position(message: str, name: str) -> int | None:
    """Where `message` first gives the value of field `name` (`name=` or `name[`), else `None`."""
    match = re.search(rf"(?<![\w-]){re.escape(name)}(?=[=\[])", message)
    return match.start() if match else None


class CommandLineParser(argparse.ArgumentParser):
    """`argparse.ArgumentParser` whose errors are one line (`<prog>: error: <message>`, status 2), not the usage.

    Every command of hf_icl uses it, so every bad value reads the same; `--help` still prints the full usage.
    """

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        for old, new in _PROGRAM_NAMES.items():
            if self.prog == old or self.prog.startswith(old + " "):
                self.prog = new + self.prog[len(old) :]

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {one_line(message)}\n")

    def fail(self, error: BaseException | str):
        """Exit with status 2 and the one line of `error` (a `ValueError` from validation, or a message)."""
        self.error(str(error))


@contextmanager
def renamed_programs(names: Mapping[str, str]):
    """Within the block, parsers created with a program name that starts with a key of `names` use its value
    instead (`hf-icl export regbench` for `python -m hf_icl.export regbench`), so messages name the command typed.
    """
    saved = dict(_PROGRAM_NAMES)
    _PROGRAM_NAMES.update(names)
    try:
        yield
    finally:
        _PROGRAM_NAMES.clear()
        _PROGRAM_NAMES.update(saved)


def key_value(flag: str, example: str):
    """An argparse `type` for `FIELD=VALUE` (the value read as JSON where it parses, else kept as a string).

    Args:
        flag: the option it parses (argparse names the option in its message itself).
        example: a valid `FIELD=VALUE`, shown in the message.
    """

    def parse(text: str) -> tuple[str, object]:
        key, equals, value = text.partition("=")
        if not equals or not key.strip():
            raise argparse.ArgumentTypeError(f"{text!r} must look like FIELD=VALUE, e.g. {example}")
        try:
            return key.strip(), json.loads(value)
        except json.JSONDecodeError:
            return key.strip(), value

    parse.__name__ = f"{flag} FIELD=VALUE"
    return parse
