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

`-h`/`--help` and `sweep --dry-run` import no plug-in (of any of the three kinds) unless the command cannot be
described without one: a `--task T` or `--architecture A` (or `export T`) that hf_icl does not have, whose options
the help lists, or a sweep point that does not parse without them. Then every plug-in named is imported (which one
registers T is only known by importing it) and the command goes on as usual (:func:`preload`, :func:`load_pending`).
A plain `train.py --config X --help` therefore runs no code of the `imports:` of X.

A checkpoint of a plug-in architecture or mixer ships the plug-in's modeling code with it (see
`modeling.remote_code`), so it loads with `trust_remote_code=True` where neither hf_icl nor the plug-in is installed.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.machinery
import importlib.metadata
import importlib.util
import os
import sys
from pathlib import Path

ENTRY_POINT_GROUP = "hf_icl.plugins"
ENVIRONMENT_VARIABLE = "HF_ICL_PLUGINS"
IMPORT_FLAG = "--import"
IMPORT_HELP = (
    "a plug-in module to import first (a dotted name on sys.path, or the path of a .py file or package folder, "
    "e.g. ./my_plugin.py for one in the current folder), repeatable: its registered mixers, architectures and task "
    "families become valid choices (--help imports it only to describe a --task or --architecture of its own)"
)

HELP_FLAGS = frozenset({"-h", "--help"})
TOPIC_FLAGS = ("--task", "--architecture")
"""Options whose value `--help` describes (`train.py --task T --help`): a value hf_icl lacks needs the plug-ins."""

_loaded: dict[str, str] = {}  # what was given -> the module name it was imported as
_pending: list[str] = []  # plug-ins named on a command line that only describes itself: imported only when needed
_installed_pending = False  # the entry points and HF_ICL_PLUGINS, deferred by `import hf_icl` in such a process
_describing = False  # inside `describing()`: every `preload` defers


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

    from .utils.strict_yaml import read_yaml

    try:
        values = read_yaml(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return []  # the command's own `--config` check reports the file
    imports = values.get("imports") if isinstance(values, dict) else None
    return [str(name) for name in imports] if isinstance(imports, list) else []


def preload(argv: list[str] | None, describe_only: bool | None = None) -> list[str]:
    """Import the plug-ins a command line names, before its parser is built (their names become valid choices).

    A command line that only describes itself (`-h`/`--help`, or `describe_only`, or inside :func:`describing`)
    imports none of them unless it names a `--task` or `--architecture` that no loaded code registers: the names are
    kept for :func:`load_pending`.

    Args:
        argv: the command's arguments (`None`: `sys.argv[1:]`).
        describe_only: whether the command only describes (`None`: it does when `argv` holds `-h` or `--help`).

    Returns:
        The module names imported now.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    names = imports_in_argv(argv)
    if describe_only is None:
        describe_only = _describing or bool(HELP_FLAGS & set(argv))
    if not describe_only:
        _pending.clear()  # what an earlier command of this process deferred is not this command's to import
        return [*load_pending(), *import_plugins(names)]
    for name in names:
        if name not in _loaded and name not in _pending:
            check_findable(name)  # deferred, not unchecked: a plug-in that does not exist is refused all the same
            _pending.append(name)
    return load_pending() if unknown_topics(argv) else []


def check_findable(name: str, flag: str = IMPORT_FLAG) -> None:
    """Refuse a plug-in that cannot be imported because it is not there (a missing file, or no top-level module of
    that name on the import path), without running any of its code.

    Raises:
        ValueError: naming the option and the plug-in.
    """
    path = Path(name)
    if name.endswith(".py") or os.sep in name or path.is_dir():
        if not path.exists():
            raise ValueError(f"argument {flag}: {name!r} does not exist (expected a module name, .py file or package)")
        return
    if not module_exists(name):
        raise ValueError(f"argument {flag}: plug-in {name!r} failed to import (ModuleNotFoundError: No module named "
                         f"{name!r})")  # fmt: skip


def module_exists(name: str) -> bool:
    """Whether the dotted module `name` can be found, part by part on the import path, without importing it (no code
    of its packages runs; a package imported already is searched through its `__path__`)."""
    parts = name.split(".")
    try:
        spec = importlib.util.find_spec(parts[0])  # a top-level name: found without importing it
        for i in range(1, len(parts)):
            qualified, parent = ".".join(parts[: i + 1]), sys.modules.get(".".join(parts[:i]))
            if spec is None:
                return False
            locations = getattr(parent, "__path__", None) if parent is not None else spec.submodule_search_locations
            if qualified in sys.modules:
                spec = sys.modules[qualified].__spec__
            elif not locations:
                return False  # not a package: it has no submodules
            else:
                spec = importlib.machinery.PathFinder.find_spec(qualified, list(locations))
    except (ImportError, ValueError):
        return False
    return spec is not None


def unknown_topics(argv: list[str]) -> list[str]:
    """The values of `--task`/`--architecture` in `argv` that no loaded code registers (a plug-in's, to describe)."""
    from .architectures import list_architectures
    from .tasks import list_tasks

    known = {"--task": list_tasks, "--architecture": list_architectures}
    found = []
    for i, arg in enumerate(argv):
        flag, _, value = arg.partition("=")
        if flag in TOPIC_FLAGS and not value and i + 1 < len(argv):
            value = argv[i + 1]
        if flag in TOPIC_FLAGS and value and value not in known[flag]():
            found.append(value)
    return found


def load_pending() -> list[str]:
    """Import the plug-ins a describing command deferred (:func:`preload`, :func:`load_installed_plugins`), now that
    it needs them; returns their module names."""
    global _installed_pending
    loaded = []
    if _installed_pending:
        _installed_pending = False
        loaded += load_installed_plugins()
    while _pending:
        loaded.append(import_plugin(_pending.pop(0)))
    return loaded


def has_pending() -> bool:
    """Whether a describing command deferred plug-ins it has not imported."""
    return _installed_pending or bool(_pending)


@contextlib.contextmanager
def describing():
    """Within the block, :func:`preload` defers every plug-in (`sweep --dry-run` checks its points in it)."""
    global _describing
    saved, _describing = _describing, True
    deferred = list(_pending)
    try:
        yield
    finally:
        _describing = saved
        _pending[:] = deferred  # what the block deferred and did not need stays unimported, and is not kept


def command_of_this_process(argv: list[str] | None = None) -> tuple[str, list[str]] | None:
    """`(command, arguments)` when this process runs an hf_icl command (`train.py ...` of this repository,
    `python -m hf_icl.<module> ...`, `hf-icl <command> ...`), else `None` (a notebook, a test, a user's script).

    Args:
        argv: the interpreter's own command line (default `sys.orig_argv`: `python [options] -m module ...`).
    """
    argv = list(getattr(sys, "orig_argv", sys.argv) if argv is None else argv)
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == "-m" or (arg.startswith("-m") and not arg.startswith("--")):
            split = arg == "-m" and i + 1 < len(argv)  # `-m module` or `-mmodule`
            module, rest = (argv[i + 1], argv[i + 2 :]) if split else (arg[2:], argv[i + 1 :])
            return (module.rpartition(".")[2], rest) if module.split(".")[0] == "hf_icl" else None
        if arg.startswith("-c") or arg == "-":
            return None
        if arg.startswith("-"):
            i += 2 if arg in ("-X", "-W", "--check-hash-based-pycs") else 1
            continue
        script, rest = Path(arg), argv[i + 1 :]
        if script.name == "hf-icl":
            return (rest[0], rest[1:]) if rest else ("", [])
        if script.name == "train.py" and script.resolve().parent == Path(__file__).resolve().parents[1]:
            return "train", rest
        return None
    return None


def process_describes_only(argv: list[str] | None = None) -> bool:
    """Whether this process is an hf_icl command that only describes itself: `-h`/`--help`, or `sweep --dry-run`
    (then `import hf_icl` defers the installed plug-ins; see :func:`preload`)."""
    command = command_of_this_process(argv)
    if command is None:
        return False
    name, arguments = command
    return bool(HELP_FLAGS & set(arguments)) or (name == "sweep" and "--dry-run" in arguments)


def add_import_argument(parser) -> None:
    """Declare `--import` on a command's parser (it was already acted on by :func:`preload`)."""
    parser.add_argument(IMPORT_FLAG, dest="imports", action="append", default=None, metavar="MODULE", help=IMPORT_HELP)


def load_installed_plugins(defer: bool = False) -> list[str]:
    """Import the plug-ins of the `hf_icl.plugins` entry-point group and of `HF_ICL_PLUGINS` (by `import hf_icl`).

    Args:
        defer: import nothing now, only when :func:`load_pending` is called (a process that only describes itself).

    Raises:
        ImportError: naming the entry point (and its distribution) or the variable, when a plug-in fails to import.
    """
    global _installed_pending
    if defer:
        _installed_pending = True
        return []
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
