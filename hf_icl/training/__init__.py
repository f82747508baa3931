"""Training: argument schema, the Accelerate loop, checkpoints and run reports."""

from .arguments import RunArguments, build_parser, parse_args


def main(argv=None):
    """Entry point of `train.py`: parse and check everything (failing fast on bad input), train, evaluate."""
    from .loop import preflight, train

    parser = build_parser()
    try:
        args = parse_args(argv)
        resume_from = preflight(args)
    except (ValueError, FileExistsError, FileNotFoundError, ConnectionError) as err:
        parser.exit(2, f"train.py: error: {err}\n")
    return train(args, resume_from)


__all__ = ["RunArguments", "build_parser", "main", "parse_args"]
