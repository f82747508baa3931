"""No code branches on a mixer's or an architecture's name outside the file or folder that owns it (issue: every unit
declares and registers itself). Task and family names are checked by `test_task_registry.py`, with the same finder."""

import ast
import inspect
from pathlib import Path

from test_task_registry import compared_names

import hf_icl
from hf_icl.mixers import list_mixers, mixer_spec

PACKAGE = Path(hf_icl.__file__).parent


def owners() -> dict[str, set[Path]]:
    """Name -> the files or folders allowed to compare a value with it."""
    found: dict[str, set[Path]] = {}
    for name in list_mixers():
        found.setdefault(name, set()).add(Path(inspect.getfile(mixer_spec(name).mixer_class)))
    for name, entry in hf_icl.ARCHITECTURES.items():
        found.setdefault(name, set()).add(Path(inspect.getfile(entry.config_class)).parent)
    return found


def test_no_code_branches_on_a_mixer_or_architecture_name_outside_its_owner():
    allowed = owners()
    assert {"attention", "mamba", "gla", "transformer", "regular_gpt"} <= set(allowed)
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for line, value in compared_names(ast.parse(path.read_text(encoding="utf-8"))):
            if value in allowed and not any(path == owner or owner in path.parents for owner in allowed[value]):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {value!r}")
    assert not found, "branches on a mixer or architecture name outside its owner:\n" + "\n".join(found)


def test_the_finder_flags_a_mixer_name_comparison(tmp_path):
    tree = ast.parse('if layer_type == "mamba" or arch in ("gla", x): pass')
    assert sorted(value for _, value in compared_names(tree)) == ["gla", "mamba"]
