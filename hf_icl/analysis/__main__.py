"""`python -m hf_icl.analysis <command> [...]`: one subcommand per analysis module.

An analysis is one module that declares `COMMAND` (its subcommand name), `DESCRIPTION`, `TASK_FAMILY` (the task
family whose models it reads, or `None` for a model of any task), `add_arguments(parser)`, `run(args)` and
optionally `check_arguments(args)` (raises `ValueError` naming the argument, before any work). A
`ValueError` from `run` whose message starts with "argument " is a check that needed the data; it ends in one line
too, so `run` makes such checks before it writes anything. Every such module in this folder is found on its own; a
plug-in adds one with `register_analysis(module)` (or just by being imported with `--import`, if it calls
`register_analysis`).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
from types import ModuleType

from .. import analysis
from ..plugins import add_import_argument, preload
from ..tasks import FAMILIES
from ..utils.validation import CommandLineParser

ANALYSES: dict[str, ModuleType] = {}
"""Subcommand -> analysis module."""


def register_analysis(module: ModuleType) -> ModuleType:
    """Make `module` a subcommand of `python -m hf_icl.analysis` under its `COMMAND`.

    Raises:
        ValueError: the module lacks part of the interface, or its command is taken by another module.
    """
    required = ("COMMAND", "DESCRIPTION", "TASK_FAMILY", "add_arguments", "run")
    missing = [name for name in required if not hasattr(module, name)]
    if missing:
        raise ValueError(f"analysis module {module.__name__} lacks {', '.join(missing)}")
    if module.TASK_FAMILY is not None and module.TASK_FAMILY not in FAMILIES:
        raise ValueError(f"analysis module {module.__name__}: TASK_FAMILY={module.TASK_FAMILY!r} is not one of: "
                         f"{', '.join(sorted(FAMILIES))}, None")  # fmt: skip
    if ANALYSES.get(module.COMMAND, module) is not module:
        raise ValueError(f"analysis command {module.COMMAND!r} is already taken by {ANALYSES[module.COMMAND].__name__}")
    ANALYSES[module.COMMAND] = module
    return module


def discover() -> None:
    """Register every module of this folder that declares a `COMMAND`."""
    for info in pkgutil.iter_modules(analysis.__path__):
        if not info.name.startswith("_"):
            module = importlib.import_module(f"{analysis.__name__}.{info.name}")
            if hasattr(module, "COMMAND"):
                register_analysis(module)


def build_parser() -> argparse.ArgumentParser:
    discover()
    parser = CommandLineParser(prog="python -m hf_icl.analysis", description=__doc__.splitlines()[0])
    add_import_argument(parser)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module in sorted(ANALYSES.items()):
        reads = f"models of task family {module.TASK_FAMILY!r}" if module.TASK_FAMILY else "a model of any task"
        summary = f"{module.DESCRIPTION.splitlines()[0]} [{reads}]"
        sub = commands.add_parser(name, help=summary, description=f"{module.DESCRIPTION}\n\nReads {reads}.")
        module.add_arguments(sub)
        sub.set_defaults(run=module.run, check=getattr(module, "check_arguments", None))
    return parser


def main(argv: list[str] | None = None) -> dict:
    """Entry point: import plug-ins, parse, check every argument (status 2 and one line on a bad one), run."""
    try:
        preload(argv)
    except ValueError as err:
        CommandLineParser(prog="python -m hf_icl.analysis").fail(err)
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.check is not None:
        try:
            args.check(args)
        except (ValueError, OSError) as err:
            parser.fail(f"{args.command}: {err}")
    try:
        return args.run(args)
    except ValueError as err:  # a check that needs the data (a row past the split's end), made before any write
        if not str(err).startswith("argument "):
            raise
        parser.fail(f"{args.command}: {err}")


if __name__ == "__main__":
    # `python -m` runs this file as a second module named `__main__`; a plug-in's `register_analysis` fills the
    # ANALYSES of `hf_icl.analysis.__main__`, so the command runs that module's `main`.
    from hf_icl.analysis.__main__ import main as run_command

    run_command()
