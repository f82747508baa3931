"""Ship hf_icl's modeling code with a checkpoint: the standard `register_for_auto_class` + `save_pretrained` route.

transformers' `save_pretrained` copies the file of each class registered with `register_for_auto_class`, plus the
files it reaches through *single-dot* relative imports (`custom_object_save`). hf_icl's classes span packages
(`models/<arch>`, `modeling/`, `mixers/`), which that copy cannot follow: it raises after writing part of the folder.
So the `save_pretrained` of `ICLPreTrainedModel` and of `ICLConfig` go through :func:`save_pretrained_with_code`:

1. :func:`exported_classes` picks the classes to ship: those registered with `register_for_auto_class` and, for a
   model, by default its config (`AutoConfig`), itself (its `auto_class_name`) and its backbone (`AutoModel`), so a
   plain `model.save_pretrained(folder)` is always remote-loadable;
2. :func:`collect_modeling_sources` follows every relative import from their modules, rewrites each to a flat
   sibling (`from .decoder import ...`) and rejects code that would import hf_icl by name. It reads the files
   without importing them, so an optional kernel module (the numba scan, behind a guarded `try: from .x import`) is
   shipped as a file and never imported here: the export needs none of the optional packages, and the exported code
   loads where they are missing, as the package itself does;
3. transformers writes its files into a staging folder next to the destination, with the config's registration
   hidden from its own copy step; the code and `auto_map` join them there, and only then do the files move into
   place, `config.json` last. A failed save leaves the destination as it was.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.util
import inspect
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from transformers import PreTrainedConfig
from transformers.utils import CONFIG_NAME
from transformers.utils.hub import create_and_tag_model_card, hf_api

SHIPPED_PACKAGE = "hf_icl"  # absolute imports of it (from plug-ins) become flat relative ones
RELATIVE_IMPORT = re.compile(r"^(\s*)from\s+(\.+)([\w.]*)\s+import\s+", flags=re.MULTILINE)
WEIGHT_SHARD = re.compile(r"model.*-\d{5}-of-\d{5}\.safetensors")


def _flat_name(module_name: str) -> str:
    return module_name.rsplit(".", 1)[-1]


def _module_file(module_name: str) -> Path:
    """The source file of `module_name`, found without importing it (importing would run an optional kernel's
    `import numba` and fail where numba is not installed)."""
    module = sys.modules.get(module_name)
    if module is not None and getattr(module, "__file__", None):
        return Path(module.__file__)
    spec = importlib.util.find_spec(module_name)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        raise ValueError(f"cannot export {module_name}: no Python source file found for it")
    return Path(spec.origin)


def _module_package(module_name: str) -> str:
    module = sys.modules.get(module_name)
    if module is not None:
        return module.__package__ or module_name.rpartition(".")[0]
    return module_name if _module_file(module_name).name == "__init__.py" else module_name.rpartition(".")[0]


def _defining_module(module_name: str, name: str) -> tuple[str, bool]:
    """Where `from <module_name> import <name>` really comes from: `(module, is_module)`. A re-exported class or
    function resolves to the module that defines it (`from hf_icl import register_mixer` -> `hf_icl.mixers.registry`);
    a submodule to itself."""
    module = importlib.import_module(module_name)
    obj = getattr(module, name, None)
    if obj is None or inspect.ismodule(obj):
        return (obj.__name__ if obj is not None else f"{module_name}.{name}"), True
    defined_in = getattr(obj, "__module__", None) or module_name
    if defined_in == SHIPPED_PACKAGE or not defined_in.startswith(SHIPPED_PACKAGE + "."):
        raise ValueError(
            f"cannot ship `from {module_name} import {name}`: import it from the {SHIPPED_PACKAGE} module that "
            "defines it (e.g. `from hf_icl.mixers.registry import register_mixer`)"
        )
    return defined_in, False


def _rewrite_absolute_imports(source: str, module_name: str, pending: list[str]) -> str:
    """Rewrite `from hf_icl.<module> import name` (plug-in code) into flat relative imports, queueing the targets.

    Raises:
        ValueError: a plain `import hf_icl...` (attribute access cannot be rewritten), or a name that is not defined
            in a shippable hf_icl module.
    """
    lines = source.splitlines(keepends=True)
    edits = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import) and any(a.name.partition(".")[0] == SHIPPED_PACKAGE for a in node.names):
            raise ValueError(
                f"{module_name} line {node.lineno}: `import {SHIPPED_PACKAGE}...` cannot ship with a checkpoint; "
                f"write `from {SHIPPED_PACKAGE}.<module> import <name>`"
            )
        if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module):
            continue
        if node.module.partition(".")[0] != SHIPPED_PACKAGE:
            continue
        statements = []
        for alias in node.names:
            target, is_module = _defining_module(node.module, alias.name)
            pending.append(target)
            local = alias.asname or alias.name
            if is_module:
                statements.append(f"from . import {_flat_name(target)} as {local}")
            else:
                renamed = f" as {local}" if alias.asname else ""
                statements.append(f"from .{_flat_name(target)} import {alias.name}{renamed}")
        indent = " " * node.col_offset
        edits.append((node.lineno, node.end_lineno, indent + f"\n{indent}".join(statements) + "\n"))
    for start, end, text in sorted(edits, reverse=True):
        lines[start - 1 : end] = [text]
    return "".join(lines)


def collect_modeling_sources(root_modules: list[str]) -> dict[str, str]:
    """Flat file name -> rewritten source for `root_modules` and every module they import relatively.

    Modules are read from their files, never imported, so a guarded import of an optional kernel is followed
    without its package installed. Modules outside hf_icl (plug-ins) may import hf_icl by absolute name, as
    `from hf_icl.<module> import <name>`: those imports become flat relative ones too.

    Args:
        root_modules: dotted names of modules (the model and config modules).

    Returns:
        Mapping from `<flat_name>.py` to its source with relative imports rewritten to `from .<flat_name> import`.

    Raises:
        ValueError: two different modules would share a flat file name, or a module imports its top-level package
            by name (the shipped code must load where that package is not installed).
    """
    sources: dict[str, str] = {}
    owners: dict[str, str] = {}
    seen: set[str] = set()
    pending = list(root_modules)
    while pending:
        module_name = pending.pop()
        if module_name in seen:
            continue
        seen.add(module_name)
        flat = _flat_name(module_name)
        package = _module_package(module_name)

        def rewrite(match, package=package):
            target = importlib.util.resolve_name(match.group(2) + match.group(3), package)
            pending.append(target)
            return f"{match.group(1)}from .{_flat_name(target)} import "

        source = RELATIVE_IMPORT.sub(rewrite, _module_file(module_name).read_text(encoding="utf-8"))
        top = module_name.partition(".")[0]
        if top != SHIPPED_PACKAGE:
            source = _rewrite_absolute_imports(source, module_name, pending)
        for package in dict.fromkeys((top, SHIPPED_PACKAGE)):
            if re.search(rf"^\s*(from|import)\s+{package}\b", source, flags=re.MULTILINE):
                raise ValueError(
                    f"{module_name} imports {package} by name; shipped modeling code uses relative imports only"
                )
        # Code loaded with trust_remote_code can hold two copies of one file (transformers caches the config's and
        # the model's modules apart); identical copies are one file, different ones cannot share the name.
        if flat in owners and sources[f"{flat}.py"] != source:
            raise ValueError(f"modules {owners[flat]} and {module_name} would both be exported as {flat}.py")
        owners.setdefault(flat, module_name)
        sources[f"{flat}.py"] = source
    return sources


def exported_classes(obj) -> dict[str, type]:
    """The auto classes `obj`'s checkpoint maps to code, as `{auto class name: class}`.

    Args:
        obj: an hf_icl model (`ICLPreTrainedModel`) or config (`ICLConfig`).

    Returns:
        For a config, its class under the auto class it was registered for (empty when unregistered, as in
        transformers). For a model: the config class under `AutoConfig`; the model class under the auto class it was
        registered for, else its `auto_class_name`; its `base_model_class` (if any) likewise, unless that auto class
        is already taken by the model.
    """
    if isinstance(obj, PreTrainedConfig):
        return {obj._auto_class: type(obj)} if obj._auto_class else {}
    classes = {"AutoConfig": type(obj.config)}
    for cls in (type(obj), getattr(type(obj), "base_model_class", None)):
        if cls is not None:
            classes.setdefault(cls._auto_class or cls.auto_class_name, cls)
    return classes


def export_modeling_code(obj, folder: str | Path) -> dict[str, str]:
    """Write the flat modeling files `obj` needs into `folder` and return the `auto_map` entries for them.

    Besides the exported classes' modules, the files of the mixers the config's layers use and of the block features
    it turns on are shipped, and the config's module imports them at its end: mixers and features register
    themselves on import (`mixers.registry`, `block_features.feature_registry`), so the shipped code knows exactly
    the units this checkpoint needs, plug-ins included, and no others.

    Args:
        obj: an hf_icl model or config (see :func:`exported_classes`).
        folder: an existing folder.

    Returns:
        `{auto class name: "<flat module>.<class name>"}`.
    """
    from ..block_features.feature_registry import used_block_features
    from ..mixers.registry import MIXERS

    classes = exported_classes(obj)
    config = obj if isinstance(obj, PreTrainedConfig) else obj.config
    config_module = type(config).__module__
    unit_classes = {MIXERS[name] for name in getattr(config, "mixer_types", None) or []}
    unit_classes |= set(used_block_features(config))
    unit_classes = {cls for cls in unit_classes if cls.__module__ != config_module}  # defined beside the config
    unit_modules = {cls.__module__ for cls in unit_classes}
    sources = collect_modeling_sources(sorted({cls.__module__ for cls in classes.values()} | unit_modules))
    config_file = f"{_flat_name(config_module)}.py"
    if unit_classes and config_file in sources:
        # `from .x import Name`: transformers copies a remote module's dependencies by this pattern only.
        imports = "".join(
            f"from .{_flat_name(cls.__module__)} import {cls.__name__}  # noqa: E402, F401\n"
            for cls in sorted(unit_classes, key=lambda cls: (cls.__module__, cls.__name__))
        )
        note = "# Added by hf_icl's export: the mixers and block features of this checkpoint register on import.\n"
        sources[config_file] += f"\n\n{note}{imports}"
    for name, source in sources.items():
        (Path(folder) / name).write_text(source, encoding="utf-8")
    return {auto: f"{_flat_name(cls.__module__)}.{cls.__name__}" for auto, cls in classes.items()}


@contextlib.contextmanager
def _registration_hidden(config: PreTrainedConfig):
    """Hide `config`'s auto-class registration from transformers' own copy step, on this instance only."""
    missing = object()
    previous = vars(config).get("_auto_class", missing)
    vars(config)["_auto_class"] = None
    try:
        yield
    finally:
        if previous is missing:
            vars(config).pop("_auto_class", None)
        else:
            vars(config)["_auto_class"] = previous


def _move_into(staging: Path, destination: Path) -> None:
    """Move the staged files into `destination`: in one rename when it is new, else file by file (code first,
    `config.json` last), removing weight shards of an earlier save that this one did not rewrite (as transformers
    does when saving in place)."""
    if not destination.exists():
        staging.rename(destination)
        return
    destination.mkdir(exist_ok=True)
    staged = sorted(staging.iterdir(), key=lambda p: (p.name == CONFIG_NAME, p.suffix != ".py", p.name))
    for path in staged:
        target = destination / path.name
        if path.is_dir() and target.is_dir():
            _move_into(path, target)
        else:
            os.replace(path, target)
    names = {path.name for path in staged}
    if any(name.startswith("model") and name.endswith(".safetensors") for name in names):
        for old in destination.iterdir():
            if old.name not in names and old.is_file() and WEIGHT_SHARD.fullmatch(old.name):
                old.unlink()


@contextlib.contextmanager
def _staging_folder(destination: Path):
    """An empty folder beside `destination` whose files replace `destination`'s once the block succeeds."""
    if destination.is_file():
        raise NotADirectoryError(f"save_directory={str(destination)!r} is a file, not a folder")
    destination.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", suffix=".saving", dir=destination.parent))
    try:
        yield staging
        _move_into(staging, destination)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def save_pretrained_with_code(obj, save: Callable, save_directory: str | os.PathLike, push_to_hub=False, **kwargs):
    """Run transformers' `save_pretrained` of `obj` so that the folder also ships the code, written atomically.

    Args:
        obj: an hf_icl model or config.
        save: the transformers `save_pretrained` of `obj` (its base class's bound method).
        save_directory: the destination folder; files already there that the save does not write are kept.
        push_to_hub: also upload the saved folder, as transformers does: the repo is created first (`repo_id`,
            default the folder's name; `private`, `repo_type`), then the files this save wrote are committed
            (`commit_message`, `create_pr`, `token`).
        **kwargs: passed to `save`. Ranks that write nothing, and `distributed_checkpoint=True` saves (every rank
            writes into the same folder; meant for resuming, not sharing), save in place without the code.

    Returns:
        What `save` returns, or the upload's commit info with `push_to_hub=True`.
    """
    config = obj if isinstance(obj, PreTrainedConfig) else obj.config
    in_place = not isinstance(obj, PreTrainedConfig) and (
        kwargs.get("distributed_checkpoint") or not obj.should_save_on_this_rank(kwargs.get("is_main_process", True))
    )
    if not exported_classes(obj) or in_place:
        with _registration_hidden(config):
            return save(save_directory, push_to_hub=push_to_hub, **kwargs)
    destination = Path(save_directory).absolute()
    if push_to_hub:
        upload = {key: kwargs.pop(key) for key in ("commit_message", "create_pr") if key in kwargs}
        repo_id = kwargs.pop("repo_id", destination.name)
        create = {key: kwargs.pop(key) for key in ("private", "repo_type") if key in kwargs}
        repo_id = hf_api().create_repo(repo_id, exist_ok=True, token=kwargs.get("token"), **create).repo_id
        before = obj._get_files_timestamps(destination) if destination.is_dir() else {}
    with _staging_folder(destination) as staging:
        config.auto_map = {**(getattr(config, "auto_map", None) or {}), **export_modeling_code(obj, staging)}
        with _registration_hidden(config):
            result = save(staging, **kwargs)
    if not push_to_hub:
        return result
    if not isinstance(obj, PreTrainedConfig):  # transformers gives models a card when it pushes them
        create_and_tag_model_card(repo_id, obj.model_tags, token=kwargs.get("token")).save(destination / "README.md")
    return obj._upload_modified_files(destination, repo_id, before, token=kwargs.get("token"), **upload)
