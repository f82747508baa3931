"""`python -m hf_icl.analysis <command> [...]`: one subcommand per analysis module (see `COMMANDS`)."""

from __future__ import annotations

import argparse
import importlib

COMMANDS: dict[str, str] = {
    "slowfast": "hf_icl.analysis.slowfast",  # P3: ⟨y⟩ → (a, b) fit, n_i·n_j blocks, y-model vs folded vs baseline
}
"""Command name -> module with `DESCRIPTION`, `add_arguments(parser)` and `run(args)`; add an analysis here."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m hf_icl.analysis", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        sub = commands.add_parser(name, help=module.DESCRIPTION.splitlines()[0], description=module.DESCRIPTION)
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    return parser


def main(argv: list[str] | None = None) -> dict:
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    main()
