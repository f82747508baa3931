"""One source of defaults per task (issue 55, item 2): what `train.py --task T` generates with no options is what
`python -m hf_icl.export T` writes into T's own config (the one named after it, else the export's default, else one
of its variants): both resolve the same builder config, so a model trained with the defaults reads the exported rows
with its tokenizer."""

from __future__ import annotations

import dataclasses

import pytest

from hf_icl.tasks import FAMILIES, task_config

BOOKKEEPING = ("name", "version", "description", "data_dir", "data_files")
TASKS = sorted(
    task
    for family in FAMILIES.values()
    if family.export is not None
    for task, entry in family.tasks.items()
    if entry.builder is not None
)


def differences(trained, exported) -> dict:
    return {
        field.name: (getattr(trained, field.name), getattr(exported, field.name, None))
        for field in dataclasses.fields(trained)
        if field.name not in BOOKKEEPING and getattr(trained, field.name) != getattr(exported, field.name, None)
    }


@pytest.mark.parametrize("task", TASKS)
def test_the_export_of_a_task_uses_the_training_defaults(task):
    (family,) = [family for family in FAMILIES.values() if task in family.tasks]
    configs = family.export.configs_of(task)
    trained = task_config(task)
    found = {name: differences(trained, family.export.make_builder(name, {}, None).config) for name in configs}
    own = task if task in configs else family.export.default_config
    if own in configs:
        assert not found[own], f"{task}: train.py and the export's {own!r} config differ: {found[own]}"
    else:  # a task exported as variants (parity_p10 ... parity_p90): one of them is the training default
        assert any(not diff for diff in found.values()), f"{task}: no export config has train.py's defaults: {found}"
