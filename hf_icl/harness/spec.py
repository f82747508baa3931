"""What a task family declares to take part in lm-evaluation-harness: one :class:`HarnessTask` per lm-eval task,
and :class:`HarnessGroup` for a name that runs several of them.

A family's folder lists its declarations in ``harness.py`` as ``HARNESS_TASKS`` (and ``HARNESS_GROUPS``);
:mod:`hf_icl.harness.tasks` finds them, so a new family takes part without editing anything outside its folder.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

UTILS_MODULE = "hf_icl_harness"
"""Name of the Python file written next to the YAMLs; their ``!function`` entries point into it. It binds the
functions the families name in :attr:`HarnessTask.functions` (lm-eval resolves ``!function`` relative to the YAML, in
every 0.4 release)."""


@dataclasses.dataclass(frozen=True)
class HarnessTask:
    """One lm-eval task over one config of a dataset export.

    Args:
        name: the lm-eval task name (``hf_icl_regbench``, ``hf_icl_copy``, ...).
        configs: the export configs it can read, in order of preference (the card's default config wins when it is
            one of them).
        fields: ``(dataset split) -> YAML fields`` besides ``task``, ``dataset_path``, ``dataset_name``,
            ``test_split`` and ``metadata`` (which the writer fills): ``output_type``, ``process_docs``,
            ``doc_to_text``, ``process_results``, ``metric_list``, ... Functions are written as
            ``!function hf_icl_harness.<name>`` (see :func:`function_ref`). The split lets a task size its generation
            budget from the data.
        functions: ``{name: function}`` the YAMLs reference (a module-level function, or a ``functools.partial`` of
            one with literal arguments); the utils file binds each name.
        description: one line for the command's listing and the docs.
    """

    name: str
    configs: tuple[str, ...]
    fields: Callable[[Any], dict]
    functions: Mapping[str, Callable]
    description: str


@dataclasses.dataclass(frozen=True)
class HarnessGroup:
    """An lm-eval group: one name that runs several :class:`HarnessTask` s and reports their size-weighted mean.

    Args:
        name: the group name (``hf_icl_lookup``).
        tasks: member task names; the group is written when at least one of them is.
        metrics: metric names aggregated over the members.
        description: one line for the listing.
    """

    name: str
    tasks: tuple[str, ...]
    metrics: tuple[str, ...]
    description: str


class FunctionRef(str):
    """A YAML ``!function`` reference (rendered as ``!function hf_icl_harness.<name>``)."""


def function_ref(name: str) -> FunctionRef:
    """The YAML value ``!function hf_icl_harness.<name>`` (lm-eval imports it from the utils file next to the YAML).

    Args:
        name: a key of the task's :attr:`HarnessTask.functions`.
    """
    return FunctionRef(f"{UTILS_MODULE}.{name}")
