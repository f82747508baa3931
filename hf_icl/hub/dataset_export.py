"""Hub-layout dataset folders: what ``python -m hf_icl.export <family or task>`` writes (DESIGN §2.2).

A folder holds ``<config>/<split>-00000-of-00001.parquet`` for every config and split, and a ``README.md`` whose
YAML front matter lists each config's data files and whose prose is the dataset card. Afterwards
``datasets.load_dataset("<folder>", "<config>")`` works offline. The network is touched only by the optional push.

A task family declares one :class:`DatasetExport` in its folder (``TaskFamily.export``: its configs, how to build
one, its statistics, its card and its command-line overrides); the argument parsing, the export loop and the push
live here, and :mod:`hf_icl.export` finds the export by family, task or export name.

Exporting into a folder that already holds configs of the same export merges: the new configs are added, the card is
rewritten to list every config present (the overrides each was generated with are recorded in the card's
``hf_icl_export`` field), and a config already there is regenerated only with ``--replace-configs``. Every value, the
folder and the configs are checked before anything is generated; each config folder and the card are written
atomically.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from ..utils.atomic_files import clean_leftovers, write_folder_atomic, write_text_atomic
from ..utils.validation import CommandLineParser, check_output_folder, flag_of, naming
from .push import check_hub_reachable, push_folder

SPLITS = ("train", "validation", "test")
EXPORT_RECORD = "hf_icl_export"
"""Card field: config name -> the overrides it was generated with (what a later merge needs to describe it)."""


def data_file(config: str, split: str) -> str:
    """Path of one config's split inside the folder.

    Args:
        config: config name.
        split: split name.

    Returns:
        ``"<config>/<split>-00000-of-00001.parquet"``.
    """
    return f"{config}/{split}-00000-of-00001.parquet"


def content_fingerprint(output: Path, config: str, splits=SPLITS) -> str:
    """SHA-256 (16 hex digits) of one config's split files as written in `output`."""
    digest = hashlib.sha256()
    for split in splits:
        with open(output / data_file(config, split), "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


def front_matter(
    configs: Iterable[str], default: str | None = None, splits=SPLITS, fingerprints: Mapping[str, str] | None = None,
    **metadata,
) -> dict:  # fmt: skip
    """YAML front matter of the card: ``metadata`` first, then ``configs:`` with every config's data files.

    Args:
        configs: config names, in the order to list them.
        default: config marked ``default: true`` (none if ``None``).
        splits: split names every config has.
        fingerprints: config name -> :func:`content_fingerprint`, written as the config's ``description``: the
            ``datasets`` cache of a local folder is keyed on the card's configs (not on the files), so a re-export
            with other rows must change them, or ``load_dataset`` keeps returning the old rows.
        **metadata: other card fields (``pretty_name``, ``license``, ``tags``, ...).

    Returns:
        The front matter as a dict.
    """
    fingerprints = fingerprints or {}
    return {
        **metadata,
        "configs": [
            {
                "config_name": name,
                **({"default": True} if name == default else {}),
                **({"description": f"content fingerprint {fingerprints[name]}"} if name in fingerprints else {}),
                "data_files": [{"split": s, "path": data_file(name, s)} for s in splits],
            }
            for name in configs
        ],
    }


def render_readme(front: dict, body: str) -> str:
    """The dataset card: :class:`~huggingface_hub.DatasetCardData` built from the front matter (``configs:``
    included, which ``datasets`` and the Hub read), above the card's Markdown body and a line linking hf_icl.

    Args:
        front: output of :func:`front_matter`.
        body: the card's prose.

    Returns:
        The README text (``str(DatasetCard)``; ``DatasetCard.load`` parses it back to the same metadata).
    """
    from huggingface_hub import DatasetCard, DatasetCardData

    from .project import project_link

    data = DatasetCardData(**front)
    footer = f"\n\nWritten by {project_link()} (`python -m hf_icl.export`).\n"
    return str(DatasetCard(f"---\n{data.to_yaml()}\n---\n\n{body.rstrip()}{footer}"))


def build_configs(builders: Mapping[str, Any], statistics: Callable) -> tuple[dict, dict, dict]:
    """Prepare every builder and describe each split.

    Args:
        builders: config name -> `GeneratorBasedBuilder` (validated, not yet prepared).
        statistics: `split dataset -> dict` of card statistics.

    Returns:
        `(datasets by name, resolved builder configs by name, statistics by (name, split))`.
    """
    built, used, stats = {}, {}, {}
    for name, builder in builders.items():
        builder.download_and_prepare()
        built[name], used[name] = builder.as_dataset(), dataclasses.replace(builder.config)
        for split in SPLITS:
            stats[(name, split)] = statistics(built[name][split])
    return built, used, stats


def write_folder(output: Path, datasets_by_config: Mapping, readme: str | Callable[[], str], splits=SPLITS) -> Path:
    """Writes every config's splits as parquet (each config folder replaced atomically), then the README atomically.

    Args:
        output: destination folder (created).
        datasets_by_config: config name -> ``DatasetDict`` holding at least ``splits``.
        readme: output of :func:`render_readme`, or a function returning it once the files are written (a card
            holding their :func:`content_fingerprint`).
        splits: split names to write.

    Returns:
        The output folder.
    """
    output.mkdir(parents=True, exist_ok=True)
    clean_leftovers(output)  # what an export killed mid-write left (`.tmp-<config>`, `.old-<config>`)
    for name, dataset in datasets_by_config.items():

        def write_config(folder: Path, dataset=dataset, name=name):
            for split in splits:
                dataset[split].to_parquet(str(folder / Path(data_file(name, split)).name))

        write_folder_atomic(output / name, write_config)
    write_text_atomic(output / "README.md", readme() if callable(readme) else readme)
    return output


def present_configs(output: Path, splits=SPLITS) -> list[str]:
    """Configs whose every split file is in `output` (whatever the card says)."""
    if not output.is_dir():
        return []
    return sorted(
        p.name for p in output.iterdir()
        if p.is_dir() and all((output / data_file(p.name, split)).is_file() for split in splits)
    )


def read_card(output: Path) -> tuple[dict | None, str]:
    """`(front matter, body)` of `output/README.md`; `(None, "")` without a card with YAML front matter."""
    try:
        text = (output / "README.md").read_text(encoding="utf-8")
        _, front, body = text.split("---\n", 2)
        meta = yaml.safe_load(front)
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError):
        return None, ""
    return (meta, body) if isinstance(meta, dict) else (None, "")


def card_configs(front: dict | None) -> list[str]:
    """Config names a card's ``configs:`` lists."""
    entries = (front or {}).get("configs")
    return [e["config_name"] for e in entries if isinstance(e, dict) and "config_name" in e] if isinstance(
        entries, list
    ) else []


def recorded_overrides(front: dict | None, body: str, names: Iterable[str]) -> dict[str, dict]:
    """The overrides each named config was generated with: the card's :data:`EXPORT_RECORD`, else (cards written
    before it) the "with overrides {...}" note of the card's prose, else none."""
    record = (front or {}).get(EXPORT_RECORD)
    if isinstance(record, dict):
        return {name: dict(record.get(name) or {}) for name in names}
    legacy = {}
    match = re.search(r", with overrides (\{[^\n]*?\})\.", body)
    if match:
        try:
            legacy = ast.literal_eval(match.group(1))
        except (ValueError, SyntaxError):
            legacy = {}
    return {name: dict(legacy) if isinstance(legacy, dict) else {} for name in names}


def split_from_parquet(output: Path, config: str, split: str):
    """One exported split read back into memory (a `datasets.Dataset`), for the statistics of a kept config."""
    import datasets
    import pyarrow.parquet as pq

    return datasets.Dataset(datasets.table.InMemoryTable(pq.read_table(str(output / data_file(config, split)))))


def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds ``--output``, ``--replace-configs``, ``--cache-dir``, ``--push-to-hub`` and ``--private``.

    Args:
        parser: the export's parser.
    """
    parser.add_argument("--output", required=True, type=Path, help="destination folder (new, empty, or an export "
                        "of this kind: the configs are merged into it)")
    parser.add_argument("--replace-configs", action="store_true",
                        help="regenerate configs that the output folder already holds (otherwise refused)")
    parser.add_argument("--cache-dir", help="datasets cache directory")
    parser.add_argument("--push-to-hub", metavar="REPO", help="upload the folder to this dataset repo")
    parser.add_argument("--private", action="store_true", help="create the Hub repo as private")


def run_export(args: argparse.Namespace, export: Callable[[], Path]) -> Path:
    """Runs ``export`` and pushes its folder when ``--push-to-hub`` is given.

    Reachability is checked first, so a push that cannot happen fails before anything is generated.

    Args:
        args: parsed arguments including those of :func:`add_export_arguments`.
        export: generates and writes the folder, returning it.

    Returns:
        The output folder.
    """
    if args.push_to_hub:
        check_hub_reachable()
    folder = export()
    print(f"wrote {folder}")
    if args.push_to_hub:
        push_folder(folder, args.push_to_hub, repo_type="dataset", private=args.private)
        print(f"pushed to https://huggingface.co/datasets/{args.push_to_hub}")
    return folder


def overrides_note(overrides: Mapping) -> str:
    """The card's note on command-line overrides: ``", with overrides {...}"``, or nothing without any."""
    return f", with overrides {dict(overrides)}" if overrides else ""


@dataclasses.dataclass(frozen=True)
class DatasetExport:
    """What one family's export writes; :meth:`main` is its command (``python -m hf_icl.export <name> ...``).

    Args:
        name: the export's name on the command line (the dataset's usual folder and repo name).
        configs: Hub config names, in card order.
        make_builder: ``(config name, overrides, cache_dir) -> GeneratorBasedBuilder`` (not yet prepared); it
            applies the overrides that the config has.
        statistics: ``split dataset -> statistics`` for the card.
        render_body: ``(resolved builder configs by name, statistics by (name, split), overrides) -> card prose``.
        card_metadata: the card's YAML fields besides ``configs:`` (``pretty_name``, ``license``, ``tags``, ...).
        default_config: the config marked ``default: true`` when exported (else the first exported one).
        overrides: ``{config field: type}`` offered as ``--field-name`` options, in the order the card lists them.
        description: the ``--help`` text (the export module's docstring).
        config_tasks: Hub config -> the task whose data it holds, so ``python -m hf_icl.export <task>`` exports that
            task's configs; ``None``: every config holds the family's one task.
    """

    name: str
    configs: tuple[str, ...]
    make_builder: Callable[[str, dict, str | None], Any]
    statistics: Callable
    render_body: Callable[[dict, dict, dict], str]
    card_metadata: Mapping[str, Any]
    default_config: str
    overrides: Mapping[str, type]
    description: str = ""
    config_tasks: Mapping[str, str] | None = None

    def configs_of(self, task: str | None = None) -> list[str]:
        """The configs holding `task`'s data, in card order (all of them for `None` or without ``config_tasks``)."""
        if task is None or self.config_tasks is None:
            return list(self.configs)
        return [name for name in self.configs if self.config_tasks.get(name) == task]

    def check(
        self, output: Path, configs: Iterable[str], overrides: Mapping, cache_dir: str | None = None,
        replace: bool = False,
    ) -> dict:
        """Everything before generation: the override values (every config's builder is created, which validates
        its config, but not prepared), the output folder and the configs already in it.

        Returns:
            Config name -> its validated builder, for :meth:`export`.

        Raises:
            ValueError: naming the argument (`--n-train`, `--output`, `--configs`, ...), the value and what is
                allowed; nothing has been written.
        """
        output = Path(output)
        if cache_dir is not None:
            check_output_folder(cache_dir, "--cache-dir")
        flags = {field: flag_of(field) for field in overrides}
        builders = {}
        with naming(next(iter(flags.values()), "--configs"), flags):
            for name in dict.fromkeys(configs):
                builders[name] = self.make_builder(name, dict(overrides), cache_dir)
        self.check_output(output, list(builders), replace)
        return builders

    def check_output(self, output: Path, configs: list[str], replace: bool) -> None:
        """Refuse a file, a non-empty folder that is not an export of this kind, or configs already in it (unless
        `replace`)."""
        check_output_folder(output, "--output")
        if not output.is_dir() or not any(output.iterdir()):
            return
        front, _ = read_card(output)
        foreign_card = (output / "README.md").exists() and front is None
        if foreign_card or not (present_configs(output) or card_configs(front)):
            raise ValueError(
                f"argument --output: {output} is not empty and holds no dataset export (a README.md card listing "
                "configs, <config>/<split> parquet files); nothing was changed: choose a new or empty folder"
            )
        there = set(present_configs(output)) | set(card_configs(front))
        foreign = sorted(there - set(self.configs))
        if foreign:
            raise ValueError(
                f"argument --output: {output} holds configs this export does not write ({', '.join(foreign)}); "
                "nothing was changed: choose another folder"
            )
        clash = [name for name in configs if name in there]
        if clash and not replace:
            raise ValueError(
                f"argument --configs: {', '.join(clash)} already exist in {output}; pass --replace-configs to "
                "regenerate them, or leave them out (the other configs are merged in)"
            )

    def export(
        self, output: Path, configs: Iterable[str], overrides: Mapping, cache_dir: str | None = None,
        replace: bool = False, builders: Mapping | None = None,
    ) -> Path:
        """Generates every named config and writes them into the Hub-layout folder, merging with the configs there.

        Args:
            output: destination folder (created).
            configs: config names to export.
            overrides: config field overrides (see :attr:`make_builder`).
            cache_dir: ``datasets`` cache directory.
            replace: regenerate configs the folder already holds (otherwise :meth:`check` refuses them).
            builders: the answer of :meth:`check` (checked again when not given).

        Returns:
            The output folder.
        """
        output, overrides = Path(output), dict(overrides)
        builders = builders if builders is not None else self.check(output, configs, overrides, cache_dir, replace)
        built, used, stats = build_configs(builders, self.statistics)
        front, body = read_card(output)
        kept = [name for name in present_configs(output) if name not in built]
        record = {**recorded_overrides(front, body, kept), **{name: overrides for name in built}}
        for name in kept:  # described from the card's record and the files themselves
            try:
                used[name] = dataclasses.replace(self.make_builder(name, record[name], cache_dir).config)
            except ValueError:
                used[name] = dataclasses.replace(self.make_builder(name, {}, cache_dir).config)
                record[name] = {}
            for split in SPLITS:
                stats[(name, split)] = self.statistics(split_from_parquet(output, name, split))
        order = [name for name in self.configs if name in used]
        default = self.default_config if self.default_config in used else order[0]
        distinct = {repr(sorted(record[n].items())) for n in order}
        note = overrides if len(distinct) == 1 else {name: record[name] for name in order if record[name]}
        body = self.render_body(
            {name: used[name] for name in order},
            {(name, split): stats[(name, split)] for name in order for split in SPLITS},
            note,
        )

        def card() -> str:  # once every config's files are in place: their fingerprints key the datasets cache
            prints = {name: content_fingerprint(output, name) for name in order}
            record_field = {EXPORT_RECORD: {n: record[n] for n in order}}
            return render_readme(front_matter(order, default, fingerprints=prints, **self.card_metadata,
                                              **record_field), body)  # fmt: skip

        return write_folder(output, built, card)

    def parser(self, prog: str | None = None, default_configs: list[str] | None = None) -> argparse.ArgumentParser:
        """``--output``, ``--configs``, one option per override, ``--replace-configs``, ``--cache-dir``,
        ``--push-to-hub``, ``--private``.

        Args:
            prog: the command's name in messages (default ``python -m hf_icl.export <name>``).
            default_configs: the configs exported without ``--configs`` (default: all).
        """
        parser = CommandLineParser(
            prog=prog or f"python -m hf_icl.export {self.name}",
            description=self.description,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        add_export_arguments(parser)
        parser.add_argument(
            "--configs",
            nargs="+",
            default=list(default_configs or self.configs),
            choices=list(self.configs),
            metavar="CONFIG",
            help=f"configs to export (default: {' '.join(default_configs or self.configs)}); one of: "
            f"{', '.join(self.configs)}",
        )
        for field, kind in self.overrides.items():
            parser.add_argument(
                f"--{field.replace('_', '-')}", type=kind, help=f"override {field} where a config has it"
            )
        return parser

    def main(self, argv: list[str] | None = None, prog: str | None = None, task: str | None = None) -> Path:
        """Command-line entry point: parse, export, optionally push.

        Args:
            argv: arguments (default ``sys.argv[1:]``).
            prog: the command's name in messages.
            task: export only this task's configs unless ``--configs`` says otherwise.

        Returns:
            The output folder.
        """
        parser = self.parser(prog, self.configs_of(task))
        args = parser.parse_args(argv)
        overrides = {field: getattr(args, field) for field in self.overrides if getattr(args, field) is not None}
        configs = list(dict.fromkeys(args.configs))
        try:
            builders = self.check(args.output, configs, overrides, args.cache_dir, args.replace_configs)
            if args.push_to_hub is not None:
                from huggingface_hub.utils import validate_repo_id

                with naming("--push-to-hub"):
                    validate_repo_id(args.push_to_hub)
                check_hub_reachable()
        except (ValueError, OSError) as err:  # OSError: the Hub unreachable (ConnectionError)
            parser.fail(err)
        return run_export(
            args, lambda: self.export(args.output, configs, overrides, args.cache_dir, args.replace_configs, builders)
        )
