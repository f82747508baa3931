"""The command line shared by the generated pages: `--write PAGE`, `--check PAGE` and `--import MODULE`.

Each page module gives a `render(current)` function: the page's text from the registries as they are now, given
the page's current text (`None` where there is none yet: the page is printed, or a whole page is written).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from ..plugins import add_import_argument, preload
from ..utils.atomic_files import write_text_atomic


def page_main(
    prog: str, description: str, render: Callable[[str | None], str], needs_page: bool, argv: list[str] | None
) -> int:
    """Run a page command; returns its exit status (0 written or up to date, 1 out of date, 2 a bad argument).

    Args:
        prog: the command, as `python -m ...` names it.
        description: the `--help` description.
        render: the page's text from its current text (or `None`).
        needs_page: the page renders blocks inside an existing page (`--write` and `--check` need the file).
        argv: the arguments (default: `sys.argv[1:]`).
    """
    try:
        preload(argv)
    except ValueError as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--write", type=Path, help="write the page (or its generated blocks) here")
    parser.add_argument("--check", type=Path, help="exit 1 if this page differs from its regeneration")
    add_import_argument(parser)
    args = parser.parse_args(argv)
    for flag, page in (("--write", args.write), ("--check", args.check)):
        if needs_page and page is not None and not page.is_file():
            parser.error(f"argument {flag}: {str(page)!r} is not a file")
    if args.write:
        current = args.write.read_text(encoding="utf-8") if needs_page else None
        write_text_atomic(args.write, render(current))
    if args.check:
        current = args.check.read_text(encoding="utf-8") if args.check.is_file() else None
        if current is None or render(current if needs_page else None) != current:
            print(f"{args.check}: out of date; run {prog} --write {args.check}", file=sys.stderr)
            return 1
    if not (args.write or args.check):
        sys.stdout.write(render(None))
    return 0
