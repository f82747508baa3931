"""Training: argument schema, the Accelerate loop, checkpoints and run reports."""

import contextlib
import os
import sys

from .arguments import RunArguments, build_parser, parse_args, parse_run


def main(argv=None):
    """Entry point of `train.py`: parse and check everything (failing fast on bad input), train, evaluate.

    A bad value, a folder that must not be touched, a folder another run holds or a run that cannot be resumed exits
    with status 2 and one line (printed by the first process only under `accelerate launch`), before anything is
    written. The first process holds the run folder's lock (`utils.run_locks.RunFolderLock`) from its checks to the end.
    """
    from ..utils.validation import check_output_folder
    from .checkpoints import ResumeError
    from .loop import RunSetupError, preflight, train

    parser = build_parser()
    held = contextlib.ExitStack()
    try:
        parsed = parse_run(argv)
        check_output_folder(parsed.args.resolved_output_dir(), "--output-dir")
        held.enter_context(folder_lock(parsed.args))
    except (ValueError, OSError) as err:  # OSError: the run folder
        usage_error(parser, err)
    with held:
        announce_quickstart(parsed)
        try:
            resume_from = preflight(parsed.args)
        except (ValueError, OSError) as err:  # OSError: the run folder, or the Hub unreachable (ConnectionError)
            usage_error(parser, err)
        try:
            return train(parsed.args, resume_from, parsed.changes)
        except (ResumeError, RunSetupError) as err:
            usage_error(parser, err)


def announce_quickstart(parsed) -> None:
    """Say, on the first process, that a bare run took the default task's quickstart preset, and how to leave it."""
    preset = parsed.args.task_preset
    if preset is None or "task_preset" in parsed.given or os.environ.get("RANK", "0") != "0":
        return
    print(f"no --config, --task, --architecture or --task-preset given: training --task-preset {preset} of "
          f"{parsed.args.task} (see `train.py --help`); give --architecture to train a plain model", flush=True)


def folder_lock(args):
    """The run folder's lock on the first process, a no-op elsewhere (the first process holds it for all)."""
    from ..utils.run_locks import RunFolderLock

    if os.environ.get("RANK", "0") != "0":
        return contextlib.nullcontext()
    return RunFolderLock(args.resolved_output_dir())


def usage_error(parser, error: BaseException):
    """Exit with status 2: one line from the first process, silence from the others (they share the same error)."""
    if os.environ.get("RANK", "0") != "0":
        sys.exit(2)
    parser.fail(error)


__all__ = ["RunArguments", "build_parser", "main", "parse_args"]
