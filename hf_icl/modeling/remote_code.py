"""Export the modeling code next to a checkpoint, so `trust_remote_code=True` loads it without hf_icl.

`transformers` copies only a model's own file plus its single-dot sibling imports. hf_icl's code spans packages
(`models/<arch>`, `modeling/`, `mixers/`), so this module follows every relative import from the model and config
modules, writes each needed module as a flat file, and rewrites the imports to single-dot siblings.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

RELATIVE_IMPORT = re.compile(r"^(\s*)from\s+(\.+)([\w.]*)\s+import\s+", flags=re.MULTILINE)


def _flat_name(module_name: str) -> str:
    return module_name.rsplit(".", 1)[-1]


def _module_package(module_name: str) -> str:
    module = sys.modules[module_name]
    return module.__package__ or module_name.rpartition(".")[0]


def collect_modeling_sources(root_modules: list[str]) -> dict[str, str]:
    """Flat file name -> rewritten source for `root_modules` and every module they import relatively.

    Args:
        root_modules: dotted names of already-imported modules (the model and config modules).

    Returns:
        Mapping from `<flat_name>.py` to its source with relative imports rewritten to `from .<flat_name> import`.
    """
    sources: dict[str, str] = {}
    owners: dict[str, str] = {}
    pending = list(root_modules)
    while pending:
        module_name = pending.pop()
        flat = _flat_name(module_name)
        if owners.get(flat) == module_name:
            continue
        if flat in owners:
            raise ValueError(f"modules {owners[flat]} and {module_name} would both be exported as {flat}.py")
        owners[flat] = module_name
        package = _module_package(module_name)

        def rewrite(match, package=package):
            target = importlib.util.resolve_name(match.group(2) + match.group(3), package)
            if target not in sys.modules:
                importlib.import_module(target)
            pending.append(target)
            return f"{match.group(1)}from .{_flat_name(target)} import "

        source = Path(sys.modules[module_name].__file__).read_text(encoding="utf-8")
        sources[f"{flat}.py"] = RELATIVE_IMPORT.sub(rewrite, source)
    return sources


def export_modeling_code(model, folder: str | Path) -> dict[str, str]:
    """Write the flat modeling files for `model` into `folder` and return the `auto_map` for its config.

    Args:
        model: an `ICLForCausalLM` (or `ICLModel`) instance.
        folder: the checkpoint folder.
    """
    model_cls, config_cls = type(model), type(model.config)
    classes = {"AutoConfig": config_cls, model_cls.auto_class_name: model_cls}
    base_cls = getattr(model_cls, "base_model_class", None)
    if base_cls is not None:
        classes["AutoModel"] = base_cls
    sources = collect_modeling_sources(sorted({cls.__module__ for cls in classes.values()}))
    for name, source in sources.items():
        (Path(folder) / name).write_text(source, encoding="utf-8")
    return {auto: f"{_flat_name(cls.__module__)}.{cls.__name__}" for auto, cls in classes.items()}
