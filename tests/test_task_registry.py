"""Every task family declares itself in its folder and the rest of hf_icl asks the registry (issue 25).

- no code outside a family's folder compares a value with the family's or its tasks' names (`== "regbench"`,
  `in ("copy", ...)`), read with `ast` over the whole package;
- the family folders are found by `hf_icl.tasks` itself, and each builder keeps the `datasets` name and version of
  the previous release (the name is the builder module's file name, part of the cache path);
- `register_family` refuses a family whose tasks lack a declared per-task field, or a token family without a
  tokenizer, before anything is registered;
- the README's task table lists exactly the registered tasks.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import sys
from pathlib import Path

import pytest

import hf_icl
from hf_icl.tasks import FAMILIES, TaskEntry, family_of, list_tasks, register_family, task_entry

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "hf_icl"
BUILT_IN = {name: family for name, family in FAMILIES.items() if family.prepare_data.__module__.startswith("hf_icl.")}
"""The families hf_icl ships (tests register toy families of their own in the same process)."""


def owning_folder(family) -> Path:
    """The folder of a shipped family: `hf_icl/tasks/<folder>/`, from the module of its `prepare_data`."""
    return Path(sys.modules[family.prepare_data.__module__].__file__).parent


def compared_names(tree: ast.AST) -> list[tuple[int, str]]:
    """`(line, text)` of every string constant compared with `==`, `!=`, `in` or `not in` (in a tuple, list or set)."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for op, right in zip(node.ops, node.comparators):
            if isinstance(op, (ast.Eq, ast.NotEq)):
                sides = operands
            elif isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
                sides = right.elts
            else:
                continue
            found += [(node.lineno, side.value) for side in sides if isinstance(side, ast.Constant)]
    return [(line, value) for line, value in found if isinstance(value, str)]


def test_no_code_outside_a_family_folder_branches_on_its_names():
    owners = {}
    for family in BUILT_IN.values():
        for name in (family.name, *family.tasks):
            owners[name] = owning_folder(family)
    assert {"regbench", "generation", "copy", "vector_mqar", "parity_p"} <= set(owners)
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for line, value in compared_names(ast.parse(path.read_text(encoding="utf-8"))):
            if value in owners and owners[value] not in path.parents:
                found.append(f"{path.relative_to(ROOT)}:{line}: {value!r}")
    assert not found, "branches on a task or family name outside its folder:\n" + "\n".join(found)


def test_the_branch_finder_sees_comparisons_and_memberships():
    tree = ast.parse('if task == "copy" or "mqar" != t or name in ("regbench", x) or k not in ["a"]: pass')
    assert sorted(value for _, value in compared_names(tree)) == ["a", "copy", "mqar", "regbench"]
    assert compared_names(ast.parse('x = {"copy": 1}; y = f("mqar")')) == []


def test_every_family_folder_registers_itself():
    folders = {path.parent.name for path in (PACKAGE / "tasks").glob("*/__init__.py")}
    assert folders == {owning_folder(family).name for family in BUILT_IN.values()}
    assert {family.name for family in BUILT_IN.values()} >= {"regbench", "formal_language", "generation"}
    for task in list_tasks():
        assert task in family_of(task).tasks


PREVIOUS_BUILDERS = {
    "regbench": ("regbench", "1.0.0"),
    "parity_check": ("regular_languages", "1.0.0"),
    "copy": ("copying", "1.0.0"),
    "phonebook": ("phonebook", "1.0.0"),
    "mqar": ("recall", "1.0.0"),
    "vector_mqar": ("function_class_data", "1.1.0"),  # 1.1.0: sparse parity's evaluation splits draw S per prompt
    "icl_arithmetic": ("icl_arithmetic", "1.0.0"),
    "text_mixture": ("text_mixture", "1.0.0"),
    "text_lm": ("text_lm", "1.0.0"),
}
"""A task of each builder -> the builder's `datasets` name and version in the release before the family folders; a
version changes only where a builder's sampling did (its cache must not serve the old rows), never by a move."""


@pytest.mark.parametrize("task", sorted(PREVIOUS_BUILDERS))
def test_builders_keep_their_datasets_name_and_version(task, tmp_path):
    builder = hf_icl.tasks.task_builder(task, cache_dir=str(tmp_path))
    assert (builder.name, str(builder.VERSION)) == PREVIOUS_BUILDERS[task]
    assert Path(builder.cache_dir).relative_to(tmp_path).parts[0] == PREVIOUS_BUILDERS[task][0]


def test_every_builder_of_the_previous_release_is_still_registered():
    builders = {task_entry(task).builder for task in list_tasks()} - {None}
    assert {task_entry(task).builder for task in PREVIOUS_BUILDERS} <= builders
    assert len({name for name, _ in PREVIOUS_BUILDERS.values()}) == len(PREVIOUS_BUILDERS)  # one cache name each


def test_register_family_refuses_a_missing_per_task_declaration():
    generation = BUILT_IN["generation"]
    bare = {task: dataclasses.replace(entry, solver=None) for task, entry in generation.tasks.items()}
    renamed = {f"toy_{task}": entry for task, entry in bare.items()}
    broken = dataclasses.replace(generation, name="toy_generation", tasks=renamed)
    with pytest.raises(ValueError, match="task 'toy_copy' of family 'toy_generation' declares no solver"):
        register_family(broken)
    with pytest.raises(ValueError, match="a causal_lm family declares its tokenizer"):
        register_family(dataclasses.replace(broken, tokenizer=None))
    with pytest.raises(ValueError, match="entry field 'answer' is not one of"):
        register_family(dataclasses.replace(broken, entry_fields=("answer",)))
    assert "toy_generation" not in FAMILIES and "toy_copy" not in list_tasks()
    regression = BUILT_IN["linear_regression"]
    entry = dataclasses.replace(regression.tasks["linear_regression"], baselines=())
    with pytest.raises(ValueError, match="declares no baselines"):
        register_family(dataclasses.replace(regression, name="toy_regression_family", tasks={"toy_lr": entry}))


def test_per_task_declarations_live_in_the_entries():
    for task in BUILT_IN["generation"].tasks:
        entry = task_entry(task)
        assert entry.solver is not None and entry.spec is not None
    assert task_entry("vector_mqar").baselines == ("nearest_key",)
    assert "lasso" in task_entry("sparse_linear_regression").baselines
    assert isinstance(task_entry("regbench"), TaskEntry) and task_entry("regbench").baselines == ()


def readme_task_names(text: str) -> list[str]:
    """The `backticked` names in the first column of the README table whose header's first cell is `task` (outside
    parentheses, which hold configs and settings)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"\|\s*tasks?\s*\|", line))
    names = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        first = line.split("|")[1]
        depth, outside = 0, []
        for char in first:
            depth += char == "("
            outside.append(char if depth == 0 else " ")
            depth -= char == ")" and depth > 0
        names += re.findall(r"`([^`]+)`", "".join(outside))
    return names


def test_the_readme_task_table_lists_exactly_the_registered_tasks():
    names = readme_task_names((ROOT / "README.md").read_text(encoding="utf-8"))
    registered = sorted(task for family in BUILT_IN.values() for task in family.tasks)
    unknown = sorted(set(names) - set(registered))
    missing = sorted(set(registered) - set(names))
    assert not unknown and not missing, f"README task table: not registered {unknown}; not listed {missing}"


def test_the_readme_table_reader():
    text = "| task | status |\n|---|---|\n| `a` (configs `x`, `y`), `b` | ✅ |\n| `c` | ✅ |\n\nafter `d`"
    assert readme_task_names(text) == ["a", "b", "c"]
