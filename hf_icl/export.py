"""`python -m hf_icl.export <family or task> --output DIR [...]`: write a task family's datasets as a Hub-layout
folder (`<config>/<split>-*.parquet` and a `README.md` card listing every config), optionally pushing it.

The first argument names what to export: an export (`regbench`, `formal_languages`, `copying`, `function_classes`,
`icl_arithmetic`, `text_mixture`, `text_lm`), a task family, or a task. A task exports the configs that hold its
data unless `--configs` says otherwise; the others export every config. The options are those of
:class:`~hf_icl.hub.dataset_export.DatasetExport`: `--output`, `--configs`, `--replace-configs`, `--cache-dir`,
`--push-to-hub`, `--private`, plus the config overrides the family's export declares (`--n-train`, `--seed`,
`--n-per-length`, ...; `python -m hf_icl.export <name> --help` lists them). Every value is checked before anything
is generated; a bad one exits with status 2 and one line. Afterwards `datasets.load_dataset(DIR, "<config>")`
works offline.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .hub.dataset_export import DatasetExport
from .plugins import add_import_argument, has_pending, load_pending, preload, without_imports
from .tasks import FAMILIES
from .utils.validation import CommandLineParser

PROG = "python -m hf_icl.export"


def export_targets() -> dict[str, tuple[DatasetExport, str | None]]:
    """Every name the command accepts -> (the export it runs, the task it narrows to or `None`).

    Export names select every config; a task name the configs that hold its data (the function-class families are
    named after their one task, which wins); any other family name every config of its export.
    """
    families = [family for family in FAMILIES.values() if family.export is not None]
    targets: dict[str, tuple[DatasetExport, str | None]] = {
        family.export.name: (family.export, None) for family in families
    }
    for family in families:
        for task in family.tasks:
            targets.setdefault(task, (family.export, task))
    for family in families:
        targets.setdefault(family.name, (family.export, None))
    return targets


def build_parser(targets) -> CommandLineParser:
    parser = CommandLineParser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", metavar="EXPORT", help=f"one of: {', '.join(sorted(targets))}")
    parser.add_argument("options", nargs=argparse.REMAINDER, help="the export's options (see EXPORT --help)")
    add_import_argument(parser)
    return parser


def main(argv: list[str] | None = None) -> Path:
    """Entry point of `python -m hf_icl.export`: pick the export, then run its command with the other arguments.

    Returns:
        The output folder.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        preload(argv)  # plug-in families bring their own exports
    except ValueError as err:
        build_parser({}).fail(err)
    argv = without_imports(argv)
    targets = export_targets()
    parser = build_parser(targets)
    if argv[:1] in (["-h"], ["--help"]):
        parser.parse_args(argv)  # prints the help and exits
    target = argv[0] if argv else None
    if target is None or target.startswith("-"):
        got = f", got {target!r}" if target else ""
        parser.fail(
            f"argument EXPORT: expected an export, task family or task first{got}; one of: {', '.join(sorted(targets))}"
        )
    if target not in targets and has_pending():  # `export T --help` of a plug-in's T: it is needed to describe T
        try:
            load_pending()
        except ValueError as err:
            parser.fail(err)
        targets = export_targets()
    if target not in targets:
        parser.fail(f"argument EXPORT: {target!r} is not one of: {', '.join(sorted(targets))}")
    export, task = targets[target]
    return export.main(argv[1:], prog=f"{PROG} {target}", task=task)


if __name__ == "__main__":
    main()
