"""Analyses of trained checkpoints, run as `python -m hf_icl.analysis <command> ...`; each writes PNG + JSON.

Commands are registered in `__main__.COMMANDS` (one line each): a module with `DESCRIPTION`,
`add_arguments(parser)` and `run(args) -> dict`.
"""
