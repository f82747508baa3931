"""Analyses of trained checkpoints, run as `python -m hf_icl.analysis <command> ...`; each writes PNG + JSON.

An analysis is one module of this folder declaring `COMMAND`, `DESCRIPTION`, `add_arguments(parser)` and
`run(args) -> dict`; `__main__` finds it on its own (plug-ins: `__main__.register_analysis`).
"""
