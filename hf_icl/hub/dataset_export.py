"""Hub-layout dataset folders shared by every ``dataset_scripts/<task>.py`` (DESIGN §2.2).

A folder holds ``<config>/<split>-00000-of-00001.parquet`` for every config and split, and a ``README.md`` whose
YAML front matter lists each config's data files and whose prose is the dataset card. Afterwards
``datasets.load_dataset("<folder>", "<config>")`` works offline. The network is touched only by the optional push.

A script declares one :class:`DatasetExport` (its configs, how to build one, its statistics, its card and its
command-line overrides) and runs ``EXPORT.main()``; the argument parsing, the export loop and the push live here.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from .push import check_hub_reachable, push_folder

SPLITS = ("train", "validation", "test")


def data_file(config: str, split: str) -> str:
    """Path of one config's split inside the folder.

    Args:
        config: config name.
        split: split name.

    Returns:
        ``"<config>/<split>-00000-of-00001.parquet"``.
    """
    return f"{config}/{split}-00000-of-00001.parquet"


def front_matter(configs: Iterable[str], default: str | None = None, splits=SPLITS, **metadata) -> dict:
    """YAML front matter of the card: ``metadata`` first, then ``configs:`` with every config's data files.

    Args:
        configs: config names, in the order to list them.
        default: config marked ``default: true`` (none if ``None``).
        splits: split names every config has.
        **metadata: other card fields (``pretty_name``, ``license``, ``tags``, ...).

    Returns:
        The front matter as a dict.
    """
    return {
        **metadata,
        "configs": [
            {
                "config_name": name,
                **({"default": True} if name == default else {}),
                "data_files": [{"split": s, "path": data_file(name, s)} for s in splits],
            }
            for name in configs
        ],
    }


def render_readme(front: dict, body: str) -> str:
    """Joins the YAML front matter and the card's Markdown body.

    Args:
        front: output of :func:`front_matter`.
        body: the card's prose.

    Returns:
        The README text.
    """
    return "---\n" + yaml.safe_dump(front, sort_keys=False, allow_unicode=True) + "---\n\n" + body


def build_configs(make_builder: Callable, names: Iterable[str], statistics: Callable) -> tuple[dict, dict, dict]:
    """Build every named config and describe each split.

    Args:
        make_builder: `name -> GeneratorBasedBuilder` (not yet prepared).
        names: the export's config names.
        statistics: `split dataset -> dict` of card statistics.

    Returns:
        `(datasets by name, resolved builder configs by name, statistics by (name, split))`.
    """
    built, used, stats = {}, {}, {}
    for name in names:
        builder = make_builder(name)
        builder.download_and_prepare()
        built[name], used[name] = builder.as_dataset(), dataclasses.replace(builder.config)
        for split in SPLITS:
            stats[(name, split)] = statistics(built[name][split])
    return built, used, stats


def write_folder(output: Path, datasets_by_config: Mapping, readme: str, splits=SPLITS) -> Path:
    """Writes every config's splits as parquet, then the README.

    Args:
        output: destination folder (created).
        datasets_by_config: config name -> ``DatasetDict`` holding at least ``splits``.
        readme: output of :func:`render_readme`.
        splits: split names to write.

    Returns:
        The output folder.
    """
    output.mkdir(parents=True, exist_ok=True)
    for name, dataset in datasets_by_config.items():
        (output / name).mkdir(exist_ok=True)
        for split in splits:
            dataset[split].to_parquet(str(output / data_file(name, split)))
    (output / "README.md").write_text(readme, encoding="utf-8")
    return output


def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds ``--output``, ``--cache-dir``, ``--push-to-hub`` and ``--private`` to an export script's parser.

    Args:
        parser: the script's parser.
    """
    parser.add_argument("--output", required=True, type=Path, help="destination folder")
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
    """What one ``dataset_scripts/<task>.py`` exports; :meth:`main` is the whole script.

    Args:
        configs: Hub config names, in card order.
        make_builder: ``(config name, overrides, cache_dir) -> GeneratorBasedBuilder`` (not yet prepared); it
            applies the overrides that the config has.
        statistics: ``split dataset -> statistics`` for the card.
        render_body: ``(resolved builder configs by name, statistics by (name, split), overrides) -> card prose``.
        card_metadata: the card's YAML fields besides ``configs:`` (``pretty_name``, ``license``, ``tags``, ...).
        default_config: the config marked ``default: true`` when exported (else the first exported one).
        overrides: ``{config field: type}`` offered as ``--field-name`` options, in the order the card lists them.
        description: the ``--help`` text (the script's docstring).
    """

    configs: tuple[str, ...]
    make_builder: Callable[[str, dict, str | None], Any]
    statistics: Callable
    render_body: Callable[[dict, dict, dict], str]
    card_metadata: Mapping[str, Any]
    default_config: str
    overrides: Mapping[str, type]
    description: str = ""

    def export(self, output: Path, configs: Iterable[str], overrides: Mapping, cache_dir: str | None = None) -> Path:
        """Generates every named config and writes the Hub-layout folder.

        Args:
            output: destination folder (created).
            configs: config names to export.
            overrides: config field overrides (see :attr:`make_builder`).
            cache_dir: ``datasets`` cache directory.

        Returns:
            The output folder.
        """
        overrides = dict(overrides)
        built, used, stats = build_configs(
            lambda name: self.make_builder(name, overrides, cache_dir), configs, self.statistics
        )
        default = self.default_config if self.default_config in used else next(iter(used))
        front = front_matter(used, default, **self.card_metadata)
        return write_folder(output, built, render_readme(front, self.render_body(used, stats, overrides)))

    def parser(self) -> argparse.ArgumentParser:
        """``--output``, ``--configs``, one option per override, ``--cache-dir``, ``--push-to-hub``, ``--private``."""
        parser = argparse.ArgumentParser(
            description=self.description, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        add_export_arguments(parser)
        parser.add_argument(
            "--configs", nargs="+", default=list(self.configs), choices=list(self.configs), metavar="CONFIG"
        )
        for field, kind in self.overrides.items():
            parser.add_argument(
                f"--{field.replace('_', '-')}", type=kind, help=f"override {field} where a config has it"
            )
        return parser

    def main(self, argv: list[str] | None = None) -> Path:
        """Command-line entry point: parse, export, optionally push.

        Args:
            argv: arguments (default ``sys.argv[1:]``).

        Returns:
            The output folder.
        """
        args = self.parser().parse_args(argv)
        overrides = {field: getattr(args, field) for field in self.overrides if getattr(args, field) is not None}
        return run_export(args, lambda: self.export(args.output, args.configs, overrides, args.cache_dir))
