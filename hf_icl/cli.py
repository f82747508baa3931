"""`hf-icl COMMAND [...]`: the console command (``[project.scripts]``) in front of every `python -m hf_icl.<module>`.

    hf-icl train [...]           python -m hf_icl.train (train.py)
    hf-icl evaluate [...]        python -m hf_icl.evaluate
    hf-icl analysis [...]        python -m hf_icl.analysis
    hf-icl report [...]          python -m hf_icl.report
    hf-icl sweep [...]           python -m hf_icl.sweep
    hf-icl export [...]          python -m hf_icl.export
    hf-icl lm-eval-tasks [...]   python -m hf_icl.harness

Each subcommand calls the module's own entry function with the remaining arguments, so the parsers, the checks, the
`--import` plug-ins and the exit statuses are the module's; only the program name in messages reads `hf-icl <name>`.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass

from .utils.validation import CommandLineParser, renamed_programs


@dataclass(frozen=True)
class Command:
    """One subcommand: the module whose `main(argv)` it runs, the program name its parser uses, and how that
    function's return value becomes the exit status (what the module's ``if __name__ == "__main__"`` block does)."""

    module: str
    prog: str
    summary: str
    status: Callable[[object], int] = lambda result: 0


COMMANDS = {
    "train": Command("hf_icl.training", "train.py", "train a model, then evaluate it"),
    "evaluate": Command(
        "hf_icl.evaluation.__main__",
        "python -m hf_icl.evaluate",
        "score a checkpoint against the exact truth and the baselines",
        status=lambda result: 0 if result else 1,
    ),
    "analysis": Command("hf_icl.analysis.__main__", "python -m hf_icl.analysis", "probes, attention maps, TVD, ..."),
    "report": Command("hf_icl.report.__main__", "python -m hf_icl.report", "the paper-by-paper report of run folders"),
    "sweep": Command("hf_icl.sweep", "python -m hf_icl.sweep", "train a grid of runs", status=int),
    "export": Command("hf_icl.export", "python -m hf_icl.export", "write a task family's datasets as a Hub folder"),
    "lm-eval-tasks": Command(
        "hf_icl.harness.tasks", "python -m hf_icl.harness", "write lm-evaluation-harness tasks for dataset exports"
    ),
}
"""Subcommand name -> what it runs."""


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {command.summary}" for name, command in COMMANDS.items()]
    return "usage: hf-icl COMMAND [ARGS ...]\n\ncommands:\n" + "\n".join(lines) + "\n\n`hf-icl COMMAND --help` for one"


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `hf-icl` console script.

    Args:
        argv: the arguments after `hf-icl` (default `sys.argv[1:]`).

    Returns:
        The exit status (the console script passes it to `sys.exit`).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["-h"], ["--help"]):
        print(usage())
        return 0
    if not argv:
        print(usage(), file=sys.stderr)
        return 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        CommandLineParser(prog="hf-icl").fail(f"argument COMMAND: {name!r} is not one of: {', '.join(COMMANDS)}")
    command = COMMANDS[name]
    with renamed_programs({command.prog: f"hf-icl {name}"}):
        result = importlib.import_module(command.module).main(rest)
    return command.status(result)


if __name__ == "__main__":
    sys.exit(main())
