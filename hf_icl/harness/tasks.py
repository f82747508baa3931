"""`hf-icl lm-eval-tasks --data DIR [DIR ...] --output TASKDIR`: write lm-evaluation-harness tasks for the dataset
exports in DIR, for `lm_eval --include_path TASKDIR`.

Each DIR is a folder written by `python -m hf_icl.export` (`regbench`, `copying`, ...). Every task a family declares
(its folder's `harness.py`) whose export config is in a DIR gets one YAML pointing at that folder (`dataset_path`,
`dataset_name`), so lm-eval reads the local parquet files offline: `hf_icl_regbench` from a RegBench export,
`hf_icl_copy`, `hf_icl_mqar`, `hf_icl_lookup_prefix`, `hf_icl_lookup_suffix`, ... from a copying export, and the
group `hf_icl_lookup`. TASKDIR also receives `hf_icl_harness.py`, the functions the YAMLs name. Then:

    lm_eval --model hf --model_args pretrained=MODEL,trust_remote_code=True \\
        --tasks hf_icl_regbench,hf_icl_copy --include_path TASKDIR

Every argument is checked before anything is written; a bad one exits with status 2 and one line.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
import sys
from functools import partial
from pathlib import Path

import yaml

from ..hub.dataset_export import SPLITS, present_configs, read_card
from ..plugins import add_import_argument, preload
from ..utils.atomic_files import write_text_atomic
from ..utils.validation import CommandLineParser, key_value
from .spec import UTILS_MODULE, FunctionRef, HarnessGroup, HarnessTask

PROG = "python -m hf_icl.harness"


def declarations() -> tuple[dict[str, HarnessTask], dict[str, HarnessGroup]]:
    """Every lm-eval task and group the family folders declare (`hf_icl/tasks/<family>/harness.py`), by name."""
    import hf_icl.tasks

    tasks, groups = {}, {}
    for module in pkgutil.iter_modules(hf_icl.tasks.__path__):
        name = f"hf_icl.tasks.{module.name}.harness"
        if module.ispkg and importlib.util.find_spec(name) is not None:
            declared = importlib.import_module(name)
            tasks.update({task.name: task for task in getattr(declared, "HARNESS_TASKS", ())})
            groups.update({group.name: group for group in getattr(declared, "HARNESS_GROUPS", ())})
    return tasks, groups


def default_config(folder: Path) -> str | None:
    """The config the export's card marks `default: true`."""
    front, _ = read_card(folder)
    entries = (front or {}).get("configs") or []
    return next((e.get("config_name") for e in entries if isinstance(e, dict) and e.get("default")), None)


def plan(folders: list[Path], chosen: dict[str, str]) -> list[tuple[HarnessTask, Path, str]]:
    """Which config of which folder each task reads: the one `chosen` names, else the card's default config when the
    task reads it, else the first config the task prefers; the first folder that has one wins.

    Raises:
        ValueError: naming the argument, when a folder holds no export, a chosen task is unknown or its config is in
            no folder, or no task can read any folder.
    """
    tasks, _ = declarations()
    for name in chosen:
        if name not in tasks:
            raise ValueError(f"argument --config: {name!r} is not one of: {', '.join(sorted(tasks))}")
    present = {}
    for folder in folders:
        configs = present_configs(folder)
        if not configs:
            raise ValueError(
                f"argument --data: {str(folder)!r} holds no dataset export (<config>/<split>-*.parquet for every "
                "split); write one with python -m hf_icl.export"
            )
        present[folder] = configs
    planned = []
    for task in tasks.values():
        for folder, configs in present.items():
            wanted = [chosen[task.name]] if task.name in chosen else task.configs
            default = default_config(folder)
            order = ([default] if default in wanted else []) + list(wanted)
            config = next((c for c in order if c in configs), None)
            if config is not None:
                planned.append((task, folder, config))
                break
        else:
            if task.name in chosen:
                raise ValueError(f"argument --config: {task.name}={chosen[task.name]} is in none of the --data folders")
    if not planned:
        raise ValueError(
            "argument --data: no lm-eval task reads these exports; tasks and the configs they read: "
            + "; ".join(f"{t.name}: {', '.join(t.configs)}" for t in tasks.values())
        )
    return planned


class _TaskDumper(yaml.SafeDumper):
    """YAML with lm-eval's `!function` tag for :class:`FunctionRef` values."""


_TaskDumper.add_representer(FunctionRef, lambda dumper, value: dumper.represent_scalar("!function", str(value)))


def task_yaml(task: HarnessTask, folder: Path, config: str, split: str) -> str:
    """The YAML of one task over `folder`'s `config` (its `split` is read to size the task's fields)."""
    import datasets

    from .. import __version__

    rows = datasets.load_dataset(str(folder), config, split=split)
    fields = {
        "task": task.name,
        "dataset_path": str(folder.resolve()),
        "dataset_name": config,
        "test_split": split,
        **task.fields(rows),
        "metadata": {"version": 1.0, "hf_icl_version": __version__, "export_config": config},
    }
    head = f"# {task.description}\n# Written by hf-icl lm-eval-tasks from {folder.resolve()} ({config}, {split}).\n"
    return head + yaml.dump(fields, Dumper=_TaskDumper, sort_keys=False, allow_unicode=True, width=120)


def group_yaml(group: HarnessGroup, members: list[str]) -> str:
    """The YAML of a group over the written `members`."""
    fields = {
        "group": group.name,
        "task": members,
        "aggregate_metric_list": [{"metric": m, "aggregation": "mean", "weight_by_size": True} for m in group.metrics],
        "metadata": {"version": 1.0},
    }
    return f"# {group.description}\n" + yaml.dump(fields, Dumper=_TaskDumper, sort_keys=False, width=120)


def utils_source(functions: dict) -> str:
    """`hf_icl_harness.py`: one module-level function per name the YAMLs use, calling hf_icl's."""
    lines = [
        '"""Written by `hf-icl lm-eval-tasks`: the functions the hf_icl task YAMLs here name (`!function`)."""',
        "",
        "from importlib import import_module",
    ]
    for name, function in sorted(functions.items()):
        bound = function.args if isinstance(function, partial) else ()
        function = function.func if isinstance(function, partial) else function
        if not (inspect.isfunction(function) and function.__qualname__ == function.__name__):
            raise TypeError(f"{name}: {function!r} is not a module-level function")
        arguments = "".join(f"{value!r}, " for value in bound)
        lines += [
            "",
            "",
            f"def {name}(*args):",
            f"    return import_module({function.__module__!r}).{function.__name__}({arguments}*args)",
        ]
    return "\n".join(lines) + "\n"


def write_tasks(
    folders: list[Path], output: Path, split: str = "test", chosen: dict[str, str] | None = None
) -> list[str]:
    """Write the task YAMLs, the group YAMLs and `hf_icl_harness.py` into `output`.

    Args:
        folders: dataset export folders (`python -m hf_icl.export`).
        output: the task folder (created) to pass as `--include_path`.
        split: the split the tasks score.
        chosen: task name -> the config it reads (default: the card's default config, else the task's preferred).

    Returns:
        The task and group names written.
    """
    planned = plan([Path(f) for f in folders], dict(chosen or {}))
    output.mkdir(parents=True, exist_ok=True)
    functions, written = {}, []
    for task, folder, config in planned:
        write_text_atomic(output / f"{task.name}.yaml", task_yaml(task, folder, config, split))
        functions.update(task.functions)
        written.append(task.name)
    for group in declarations()[1].values():
        members = [name for name in group.tasks if name in written]
        if members:
            write_text_atomic(output / f"{group.name}.yaml", group_yaml(group, members))
            written.append(group.name)
    write_text_atomic(output / f"{UTILS_MODULE}.py", utils_source(functions))
    return written


def build_parser() -> CommandLineParser:
    parser = CommandLineParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", nargs="+", required=True, type=Path, metavar="DIR", help="dataset export folders")
    parser.add_argument("--output", required=True, type=Path, metavar="TASKDIR", help="folder for the task YAMLs")
    parser.add_argument("--split", default="test", choices=SPLITS, help="the split the tasks score (default test)")
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        type=key_value("--config", "hf_icl_regbench=n150"),
        metavar="TASK=CONFIG",
        help="the export config a task reads, repeatable (default: the card's default config, else the task's own)",
    )
    parser.add_argument("--list", action="store_true", help="list the tasks and groups, and the configs they read")
    add_import_argument(parser)
    return parser


def main(argv: list[str] | None = None) -> list[str]:
    """Entry point of `hf-icl lm-eval-tasks` (and `python -m hf_icl.harness`). Returns the names written."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        preload(argv)
    except ValueError as err:
        CommandLineParser(prog=PROG).fail(err)
    if "--list" in argv:
        tasks, groups = declarations()
        for task in tasks.values():
            print(f"{task.name}: {task.description} (export configs: {', '.join(task.configs)})")
        for group in groups.values():
            print(f"{group.name}: {group.description} (tasks: {', '.join(group.tasks)})")
        return []
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.output.exists() and not args.output.is_dir():
        parser.fail(f"argument --output: {str(args.output)!r} is a file, not a folder")
    try:
        written = write_tasks(args.data, args.output, args.split, {k: str(v) for k, v in args.config})
    except (ValueError, OSError) as err:
        parser.fail(err)
    command = f"lm_eval --model hf --model_args pretrained=MODEL,trust_remote_code=True --tasks {','.join(written)}"
    print(f"wrote {', '.join(written)} to {args.output}; run: {command} --include_path {args.output}")
    return written
