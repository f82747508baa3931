"""The import graph of the whole `hf_icl` package has no circle (issue 25): every module, read with `ast`.

Two graphs, both acyclic:

- import time: A -> B when importing A runs B's body, i.e. a module-level `import` or `from ... import` (inside
  `if`/`try` blocks too, but not under `if TYPE_CHECKING:`);
- dependencies: the same plus the imports inside functions and methods (deferred imports run later, but a circle
  through one is still two modules that need each other).

Importing `a.b.c` runs the packages `a` and `a.b` first, so an edge goes to each of them as well, except to the
packages that hold A itself (they are already running when A is imported). `from P import x` where `P.x` is a module
imports that module. A package that imports its subpackages by listing its own folder (`pkgutil.iter_modules`, as
`hf_icl.tasks` does with its family folders) has an edge to each of them. `importlib.import_module` calls are not
followed: they are the lazy aliases of moved names (:mod:`hf_icl.utils.deprecation`,
`hf_icl.evaluation.regbench_metrics`), which point down the layers from an old place and are imported by nothing in
the package.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "hf_icl"


def module_files() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package (a package is its `__init__.py`)."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def import_statements(body: list[ast.stmt], deferred: bool):
    """The import statements a module body runs when it is imported (and, with `deferred`, those of its functions)."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from import_statements(node.body, deferred)
            yield from import_statements(node.orelse, deferred)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from import_statements(block, deferred)
        elif isinstance(node, (ast.With, ast.For, ast.While)):
            yield from import_statements(node.body, deferred)
        elif deferred and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield from import_statements(node.body, deferred)


def imported_modules(name: str, path: Path, modules: dict[str, Path], deferred: bool = False) -> set[str]:
    """The package's modules that module `name` (file `path`) imports (at import time, or also in functions)."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    found = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in import_statements(tree.body, deferred):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
            continue
        base = package.split(".")
        if node.level:
            base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else [])) if node.level else node.module
        found.add(target)
        found.update(f"{target}.{alias.name}" for alias in node.names if f"{target}.{alias.name}" in modules)
    source = path.read_text(encoding="utf-8")
    if is_package and "iter_modules(" in source:  # imports every subpackage found in its own folder
        found.update(m for m in modules if m.rpartition(".")[0] == name and modules[m].name == "__init__.py")
    return found


def with_parents(target: str, importer: str, modules: dict[str, Path]) -> set[str]:
    """`target` and the packages above it that importing it runs, less those already running for `importer`."""
    parts = target.split(".")
    chain = {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
    running = {".".join(importer.split(".")[:i]) for i in range(1, importer.count(".") + 2)}
    return {m for m in chain - running if m in modules}


def import_graph(deferred: bool = False) -> dict[str, set[str]]:
    """Module -> the modules it imports (see the module docstring); `deferred` adds the imports of functions."""
    modules = module_files()
    graph = {}
    for name, path in modules.items():
        targets = imported_modules(name, path, modules, deferred)
        graph[name] = set().union(*(with_parents(t, name, modules) for t in targets)) - {name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph` as a path `[a, b, ..., a]`, or `None` (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for root in sorted(graph):
        if state.get(root):
            continue
        path, stack = [root], [iter(sorted(graph[root]))]
        state[root] = 1
        while stack:
            child = next(stack[-1], None)
            if child is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(child) == 1:
                return path[path.index(child) :] + [child]
            elif not state.get(child):
                state[child] = 1
                path.append(child)
                stack.append(iter(sorted(graph.get(child, ()))))
    return None


@pytest.mark.parametrize("deferred", [False, True], ids=["import time", "with deferred imports"])
def test_the_package_import_graph_has_no_cycle(deferred):
    graph = import_graph(deferred)
    assert len(graph) > 100 and {"hf_icl", "hf_icl.tasks", "hf_icl.tasks.regbench"} <= set(graph)
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


@pytest.mark.parametrize(
    "importer, expected",
    [
        ("hf_icl.tasks", {"hf_icl.tasks.regbench", "hf_icl.tasks.generation", "hf_icl.tasks.family"}),
        ("hf_icl.tasks.regbench.evaluation", {"hf_icl.baselines", "hf_icl.baselines.ngram", "hf_icl.evaluation"}),
        ("hf_icl.evaluate", {"hf_icl.evaluation", "hf_icl.evaluation.__main__"}),
    ],
)
def test_edges_follow_imports_and_the_packages_they_run(importer, expected):
    graph = import_graph()
    assert expected <= graph[importer]
    assert "hf_icl" not in graph["hf_icl.tasks.regbench.evaluation"]  # the package it is part of is running already


def test_deferred_imports_add_edges():
    assert "hf_icl.tasks" in import_graph(deferred=True)["hf_icl.training.checkpoints"]  # a function-level import
    assert "hf_icl.tasks" not in import_graph()["hf_icl.training.checkpoints"]


def test_the_cycle_finder_finds_a_cycle_and_accepts_a_tree():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


SKELETON = "hf_icl.modeling"
SHARED_BELOW_THE_SKELETON = {"hf_icl.mixers.registry", "hf_icl.block_features.feature_registry"}
"""The units' registries the skeleton may import (each imports nothing of the units it registers)."""


def direct_targets(name: str, modules: dict[str, Path]) -> set[str]:
    """The package's modules `name` imports by name (deferred imports too), without the packages that run first:
    what an exported checkpoint ships with it (`modeling.remote_code` follows exactly these)."""
    return {t for t in imported_modules(name, modules[name], modules, deferred=True) if t in modules}


def reached_from_the_skeleton() -> set[str]:
    modules = module_files()
    pending = [m for m in modules if m == SKELETON or m.startswith(SKELETON + ".")]
    reached = set()
    while pending:
        name = pending.pop()
        if name not in reached:
            reached.add(name)
            pending.extend(direct_targets(name, modules))
    return reached


def test_the_skeleton_sits_below_the_units():
    """`hf_icl/modeling` imports no unit: no specific mixer (only the mixer registry and the shared `mixers.ops`
    helpers), no architecture, no block feature (only its registry), no task; neither do the modules it imports."""
    outside = sorted(m for m in reached_from_the_skeleton() if not m.startswith(SKELETON))
    allowed = SHARED_BELOW_THE_SKELETON | {m for m in outside if m.startswith("hf_icl.mixers.ops.")}
    assert set(outside) - allowed == set(), f"the skeleton reaches units: {sorted(set(outside) - allowed)}"
    assert not any("selective_scan" in m or "ngram" in m or "slow" in m for m in outside), outside


def test_the_skeleton_names_no_block_feature():
    """No file of `hf_icl/modeling` names a paper feature (code, comments and docstrings): the features are units
    (`hf_icl/block_features/`) that the skeleton reaches through their registry's hooks only."""
    import hf_icl.block_features

    names = {*hf_icl.block_features.BLOCK_FEATURES, "ngram", "slowfast", "slow_feature"}
    pattern = re.compile("|".join(map(re.escape, sorted(names))), flags=re.IGNORECASE)
    for path in sorted((PACKAGE / "modeling").rglob("*.py")):
        match = pattern.search(path.read_text(encoding="utf-8"))
        assert match is None, f"{path.relative_to(PACKAGE.parent)} names {match.group(0)!r}"


def test_the_layering_check_sees_a_unit_imported_by_the_skeleton():
    modules = module_files()
    assert "hf_icl.mixers.registry" in direct_targets("hf_icl.modeling.layers", modules)
    assert "hf_icl.block_features.feature_registry" in direct_targets("hf_icl.modeling.decoder", modules)
    assert "hf_icl.mixers.ngram" in direct_targets("hf_icl.block_features.ngram_heads", modules)
