"""What a task's options and an architecture's config fields are, read off their declarations (for `--help`, docs).

A task's options are its builder config's fields (type, the default of the config the task fixes, the line of the
config class's `Args:` docstring), then its family's :class:`~hf_icl.tasks.family.TaskOption` declarations, with
the family's run defaults on top (what a run gets when it sets nothing). An architecture's fields are the shared
`ICLConfig` fields, the config class's own and those of the mixers its default layers use
(:class:`~hf_icl.mixers.registry.ConfigField`), with the values of the class. Nothing here names a task or an
architecture: `train.py --task T --help`, `--architecture A --help` and `docs/tasks.md` are all generated from this.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
from typing import Any

from ..architectures import ARCHITECTURES
from ..mixers.registry import fields_of
from ..modeling.configuration import ICLConfig
from ..tasks import family_of, task_entry, task_option_fields

RUN_FLAGS = {"n_train": "--n-train", "seed": "--task-seed"}
"""Builder fields a run sets with their own flag rather than `--task-option`."""


@dataclasses.dataclass(frozen=True)
class OptionDoc:
    """One documented option or config field.

    Args:
        name: the field name.
        type: its type, as written in the declaration (`int`, `float | None`, ...).
        default: the value a run gets when it sets nothing.
        doc: what it does (one line; empty where the declaration documents nothing).
        flag: how a run sets it (`--task-option`, `--n-train`, `--override`, ...).
    """

    name: str
    type: str
    default: Any
    doc: str
    flag: str


def docstring_args(cls) -> dict[str, str]:
    """Field -> description from the `Args:` sections of `cls` and its bases (the nearest class wins).

    An entry `a, b (`int`): text` documents `a` and `b`; indented lines continue it. Other entries are skipped.
    """
    found: dict[str, str] = {}
    for klass in reversed(inspect.getmro(cls)):
        doc = inspect.cleandoc(klass.__dict__.get("__doc__") or "")
        if "Args:" not in doc:
            continue
        entries: list[tuple[list[str], list[str]]] = []
        current = None  # the entry that indented lines continue (none after an entry this does not read)
        for line in doc.split("Args:", 1)[1].splitlines():
            if line.strip() and not line.startswith(" "):
                break  # the next section
            match = re.match(r"^ {4}([A-Za-z_][\w, ]*?)(?: \(([^)]*)\))?: (.*)$", line)
            if match:
                current = ([name.strip() for name in match.group(1).split(",")], [match.group(3).strip()])
                entries.append(current)
            elif line.startswith(" " * 5) and current is not None:
                current[1].append(line.strip())
            else:
                current = None
        for names, text in entries:
            found.update(dict.fromkeys(names, " ".join(text)))
    return found


def _type_name(value) -> str:
    return value if isinstance(value, str) else getattr(value, "__name__", str(value))


def show(value) -> str:
    """A default as it would be typed (`true`, `256`, `"rope"`, `null`)."""
    return json.dumps(value, default=str)


def task_options(task: str) -> list[OptionDoc]:
    """Every option of `task`: its generator's fields, then its family's run options, each with the default a run
    gets (the family's `run_defaults` over the builder config's)."""
    family, entry = family_of(task), task_entry(task)
    builder = entry.builder or entry.options_builder
    config, declared, docs = None, {}, {}
    if builder is not None:
        name = entry.config_name or builder.DEFAULT_CONFIG_NAME
        config = next((c for c in builder.BUILDER_CONFIGS if c.name == name), None) or builder.BUILDER_CONFIG_CLASS()
        declared = {f.name: f for f in dataclasses.fields(builder.BUILDER_CONFIG_CLASS)}
        docs = docstring_args(builder.BUILDER_CONFIG_CLASS)
    run_options = dict(family.run_defaults.get("task_options") or {})
    own = {option.name: option for option in family.training_options}
    out = []
    for name in task_option_fields(task):
        if name in own:
            option = own[name]
            default, kind, doc = run_options.get(name, option.default), option.type.__name__, option.doc
        else:
            default = run_options.get(name, getattr(config, name, None))
            if name == "n_train" and family.run_defaults.get("n_train"):
                default = family.run_defaults["n_train"]
            kind = _type_name(declared[name].type) if name in declared else "?"
            doc = docs.get(name, "")
        out.append(OptionDoc(name, kind, default, doc, RUN_FLAGS.get(name, "--task-option")))
    return out


def architecture_fields(architecture: str) -> list[OptionDoc]:
    """The config fields of `architecture` (`--override FIELD=VALUE`): shared, its own, then its mixers', each with
    the config class's value (the `small` defaults of most architectures; a size preset changes a few)."""
    config_class = ARCHITECTURES[architecture].config_class
    config = config_class()
    mixer_fields = fields_of(config.mixer_types)
    docs = {**{name: field.doc for name, field in mixer_fields.items()}, **docstring_args(config_class)}
    shared = {f.name for f in dataclasses.fields(ICLConfig)}
    out = [
        OptionDoc(f.name, _type_name(f.type), getattr(config, f.name, f.default), docs.get(f.name, ""), "--override")
        for f in dataclasses.fields(config_class)
        if f.name in docs or f.name not in shared
    ]
    listed = {option.name for option in out}
    for field in mixer_fields.values():
        if field.name not in listed:
            kind = _type_name(field.value_type) if field.value_type is not None else "?"
            out.append(OptionDoc(field.name, kind, getattr(config, field.name, field.default), field.doc, "--override"))
    return out


def _lines(options: list[OptionDoc]) -> list[str]:
    return [f"  {o.name} ({o.type}, default {show(o.default)}; {o.flag}): {o.doc}".rstrip(": ") for o in options]


def _preset_lines(presets) -> list[str]:
    return [f"  {name}: {show(dict(values))}" for name, values in presets.items()] or ["  (none)"]


def task_help(task: str) -> str:
    """The `--help` text of one task: its options, its family's run defaults and presets, and its metric."""
    family = family_of(task)
    lines = [f"task {task!r} (family {family.name!r}, head {family.head}):", "options:", *_lines(task_options(task))]
    lines += [f"family run defaults: {show(dict(family.run_defaults))}", "task presets (--task-preset NAME):"]
    lines += _preset_lines(family.presets)
    if family.metric_note:
        lines.append(f"metric: {family.metric_note}")
    return "\n".join(lines)


def architecture_help(architecture: str) -> str:
    """The `--help` text of one architecture: its config fields and its size presets."""
    entry = ARCHITECTURES[architecture]
    lines = [f"architecture {architecture!r} ({entry.config_class.__name__}) config fields (--override FIELD=VALUE):"]
    lines += _lines(architecture_fields(architecture))
    lines += ["size presets (--preset NAME):", *_preset_lines(entry.presets)]
    return "\n".join(lines)
