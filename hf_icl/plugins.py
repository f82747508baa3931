"""Plug-ins: modules outside hf_icl whose import registers mixers, architectures or task families.

A plug-in is any importable module that calls `hf_icl.register_mixer`, `hf_icl.register_architecture` or
`hf_icl.register_family` when imported. Three ways to load one:

- `--import MODULE` (repeatable) on every command: `train.py`, `python -m hf_icl.evaluate`, `analysis`, `report`,
  `sweep` (which passes it on to every point's subprocess) and `export`. MODULE is a dotted module name, found on
  `sys.path` only, or the path of a `.py` file or of a package folder (`./my_plugin.py`, `plugins/my_pkg`), whose
  folder is on `sys.path` during that import only: a module in the current folder is imported only when named as a
  path, and no folder stays on `sys.path` to shadow a later import. A `--config` file may list plug-ins under
  `imports:`. A training run records its plug-ins in `run_config["imports"]`.
- `HF_ICL_PLUGINS=MODULE[,MODULE...]` in the environment: imported by `import hf_icl`, so subprocesses, tests and
  notebooks see the same registry.
- The `hf_icl.plugins` entry-point group of any installed distribution (`[project.entry-points."hf_icl.plugins"]`
  `my_name = "my_package.hf_icl_plugin"` in its `pyproject.toml`), loaded by `import hf_icl`.

A checkpoint of a plug-in architecture or mixer ships the plug-in's modeling code with it (see
`modeling.remote_code`), so it loads with `trust_remote_code=True` where neither hf_icl nor the plug-in is installed.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import os
import sys
from pathlib import Path

ENTRY_POINT_GROUP = "hf_icl.plugins"
ENVIRONMENT_VARIABLE = "HF_ICL_PLUGINS"
IMPORT_FLAG = "--import"
IMPORT_HELP = (
    "a plug-in module to import first (a dotted name on sys.path, or the path of a .py file or package folder, "
    "e.g. ./my_plugin.py for one in the current folder), repeatable: its registered mixers, architectures and task "
    "families become valid choices"
)

_loaded: dict[str, str] = {}  # what was given -> the module name it was imported as


def import_plugin(name: str, flag: str = IMPORT_FLAG) -> str:
    """Import one plug-in; returns its module name. Importing the same plug-in twice is a no-op.

    Args:
        name: a dotted module name, or the path of a `.py` file or a package folder.
        flag: the option to name in errors.

    Raises:
        ValueError: naming the option and the plug-in, when it cannot be found or fails to import.
    """
    if name in _loaded:
        return _loaded[name]
    path = Path(name)
    module_name, folder = name, None
    if name.endswith(".py") or os.sep in name or (path.is_dir() and (path / "__init__.py").is_file()):
        if not path.exists():
            raise ValueError(f"argument {flag}: {name!r} does not exist (expected a module name, .py file or package)")
        folder, module_name = str(path.resolve().parent), path.stem if path.is_file() else path.name
    try:
        with _on_sys_path(folder):
            importlib.import_module(module_name)
    except Exception as err:  # the plug-in's own error, reported on one line with its name
        top = module_name.split(".")[0]
        local = next((f"./{c}" for c in (f"{top}.py", top) if folder is None and Path(c).exists()), None)
        if isinstance(err, ModuleNotFoundError) and err.name == top and local is not None:
            raise ValueError(
                f"argument {flag}: no module {top!r} on the import path; the current folder holds {local[2:]!r}, "
                f"which is imported only when named as a path: {flag} {local}"
            ) from None
        raise ValueError(f"argument {flag}: plug-in {name!r} failed to import ({type(err).__name__}: {err})") from err
    _loaded[name] = module_name
    return module_name


@contextlib.contextmanager
def _on_sys_path(folder: str | None):
    """`folder` first on `sys.path` for the block only (`None`: nothing changes), so that a plug-in's folder never
    shadows a module imported later (a `./xgboost.py` beside it is not `import xgboost`)."""
    added = folder is not None and folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    try:
        yield
    finally:
        if added and folder in sys.path:
            sys.path.remove(folder)


def import_plugins(names, flag: str = IMPORT_FLAG) -> list[str]:
    """Import each of `names` (see :func:`import_plugin`); returns their module names."""
    return [import_plugin(name, flag) for name in names]


def imports_in_argv(argv: list[str]) -> list[str]:
    """The values of every `--import X` / `--import=X` in `argv`, and the `imports:` list of a `--config` file."""
    found = []
    for i, arg in enumerate(argv):
        if arg == IMPORT_FLAG and i + 1 < len(argv):
            found.append(argv[i + 1])
        elif arg.startswith(IMPORT_FLAG + "="):
            found.append(arg.split("=", 1)[1])
        elif arg == "--config" and i + 1 < len(argv):
            found.extend(_config_imports(Path(argv[i + 1])))
        elif arg.startswith("--config="):
            found.extend(_config_imports(Path(arg.split("=", 1)[1])))
    return found


def without_imports(argv: list[str]) -> list[str]:
    """`argv` without its `--import X` / `--import=X` arguments (for commands that hand the rest to another parser)."""
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == IMPORT_FLAG:
            skip = True
        elif not arg.startswith(IMPORT_FLAG + "="):
            kept.append(arg)
    return kept


def _config_imports(path: Path) -> list[str]:
    import yaml

    from .strict_yaml import read_yaml

    try:
        values = read_yaml(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return []  # the command's own `--config` check reports the file
    imports = values.get("imports") if isinstance(values, dict) else None
    return [str(name) for name in imports] if isinstance(imports, list) else []


def preload(argv: list[str] | None) -> list[str]:
    """Import the plug-ins a command line names, before its parser is built (their names become valid choices).

    Args:
        argv: the command's arguments (`None`: `sys.argv[1:]`).
    """
    return import_plugins(imports_in_argv(list(sys.argv[1:] if argv is None else argv)))


def add_import_argument(parser) -> None:
    """Declare `--import` on a command's parser (it was already acted on by :func:`preload`)."""
    parser.add_argument(IMPORT_FLAG, dest="imports", action="append", default=None, metavar="MODULE", help=IMPORT_HELP)


def load_installed_plugins() -> list[str]:
    """Import the plug-ins of the `hf_icl.plugins` entry-point group and of `HF_ICL_PLUGINS` (by `import hf_icl`).

    Raises:
        ImportError: naming the entry point (and its distribution) or the variable, when a plug-in fails to import.
    """
    loaded = []
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            entry_point.load()
        except Exception as err:
            dist = getattr(entry_point.dist, "name", "?")
            raise ImportError(
                f"hf_icl plug-in {entry_point.name!r} = {entry_point.value!r} (entry point group {ENTRY_POINT_GROUP!r} "
                f"of the installed distribution {dist!r}) failed to import: {type(err).__name__}: {err}"
            ) from err
        loaded.append(entry_point.value)
    for name in filter(None, (part.strip() for part in os.environ.get(ENVIRONMENT_VARIABLE, "").split(","))):
        try:
            loaded.append(import_plugin(name, flag=ENVIRONMENT_VARIABLE))
        except ValueError as err:
            raise ImportError(str(err)) from err
    return loaded
