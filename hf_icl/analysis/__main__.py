"""`python -m hf_icl.analysis <command> [...]`: one subcommand per analysis module (see `COMMANDS`)."""

from __future__ import annotations

import argparse
import importlib

from ..validation import CommandLineParser

COMMANDS: dict[str, str] = {
    "slowfast": "hf_icl.analysis.slowfast",  # P3: ⟨y⟩ → (a, b) fit, n_i·n_j blocks, y-model vs folded vs baseline
    "probe": "hf_icl.analysis.probes",  # P1 §5.2: n-gram count/frequency/existence and state-equivalence probes
    "attention": "hf_icl.analysis.attention",  # P1 §5.1: attention maps with automaton states, n-gram-head mass
    "pairwise-tvd": "hf_icl.analysis.pairwise_tvd",  # P1 §5.3 Fig. 5: TVD between every pair of predictors
    "lnw": "hf_icl.analysis.lnw",  # P1 App. D: train LNW / LNW_r / LNW_b on RegBench, accuracy and TVD on test
    "regbench-baselines": "hf_icl.analysis.regbench_baselines",  # P1 Fig. 2: n-grams, Baum–Welch, LNW, a model
}
"""Command name -> module with `DESCRIPTION`, `add_arguments(parser)`, `run(args)` and optionally
`check_arguments(args)` (raises `ValueError` naming the argument, before any work); add an analysis here."""


def build_parser() -> argparse.ArgumentParser:
    parser = CommandLineParser(prog="python -m hf_icl.analysis", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        sub = commands.add_parser(name, help=module.DESCRIPTION.splitlines()[0], description=module.DESCRIPTION)
        module.add_arguments(sub)
        sub.set_defaults(run=module.run, check=getattr(module, "check_arguments", None))
    return parser


def main(argv: list[str] | None = None) -> dict:
    """Entry point: parse, check every argument (status 2 and one line on a bad one), run the analysis."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.check is not None:
        try:
            args.check(args)
        except (ValueError, OSError) as err:
            parser.fail(f"{args.command}: {err}")
    return args.run(args)


if __name__ == "__main__":
    main()
