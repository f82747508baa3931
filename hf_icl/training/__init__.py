"""Training: argument schema, the Accelerate loop, checkpoints and run reports."""

import os
import sys

from .arguments import RunArguments, build_parser, parse_args


def main(argv=None):
    """Entry point of `train.py`: parse and check everything (failing fast on bad input), train, evaluate.

    A bad value, a folder that must not be touched or a run that cannot be resumed exits with status 2 and one line
    (printed by the first process only under `accelerate launch`), before anything is written.
    """
    from .checkpoints import ResumeError
    from .loop import RunSetupError, preflight, train

    parser = build_parser()
    try:
        args = parse_args(argv)
        resume_from = preflight(args)
    except (ValueError, OSError) as err:  # OSError: the run folder, or the Hub unreachable (ConnectionError)
        usage_error(parser, err)
    try:
        return train(args, resume_from)
    except (ResumeError, RunSetupError) as err:
        usage_error(parser, err)


def usage_error(parser, error: BaseException):
    """Exit with status 2: one line from the first process, silence from the others (they share the same error)."""
    if os.environ.get("RANK", "0") != "0":
        sys.exit(2)
    parser.fail(error)


__all__ = ["RunArguments", "build_parser", "main", "parse_args"]
