"""The entry functions behind every command, called in-process as the scripts call them, and the files they must
leave alone. Shared by the fuzz test and the regression tests of bad input."""

from __future__ import annotations

import contextlib
import io
import json
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
EXPORTS = ("regbench", "formal_languages", "copying")
"""Exports whose command the CLI tests drive (their overrides are all numbers)."""


def export_command(name: str) -> SimpleNamespace:
    """`python -m hf_icl.export <name>`: `.main(argv)` runs it with the other arguments, `.EXPORT` is the family's
    `DatasetExport` and `.CONFIGS` its config names."""
    import hf_icl.export

    export, _ = hf_icl.export.export_targets()[name]
    return SimpleNamespace(
        main=lambda argv: hf_icl.export.main([name, *argv]), EXPORT=export, CONFIGS=list(export.configs)
    )


@dataclass
class Outcome:
    """What a command did: its exit status (0 when it returned), its stderr and stdout, and an escaped exception."""

    status: int | None
    err: str
    out: str
    escaped: str | None = None


def call(entry, argv: list[str]) -> Outcome:
    """Run `entry(argv)` in-process, capturing stderr and stdout and any exception that escaped."""
    err, out = io.StringIO(), io.StringIO()
    status, escaped = 0, None
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            entry(argv)
        except SystemExit as exit_:
            status = exit_.code if isinstance(exit_.code, int) else 1
        except BaseException:  # noqa: BLE001 (a traceback is exactly what the caller asserts against)
            escaped = traceback.format_exc()
    return Outcome(status, err.getvalue(), out.getvalue(), escaped)


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder`, by relative path, with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def fake_run_folder(folder: Path) -> Path:
    """A folder that looks like an earlier run of ours (marker, metrics) with a file of the user's beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    run_config = {"architecture": "transformer", "task": "regbench", "preset": "tiny"}
    (folder / "hf_icl_run.json").write_text(json.dumps({"format": "hf_icl run", "run_config": run_config}))
    (folder / "metrics.json").write_text(json.dumps({"run_config": run_config, "test": {"model": {"accuracy": 0.5}}}))
    (folder / "notes.txt").write_text("my notes\n")
    return folder


def fake_export_folder(folder: Path, script, config: str) -> Path:
    """A folder that looks like an earlier export of `script` (an :func:`export_command`) holding one `config`, plus a
    file of the user's."""
    from hf_icl.hub.dataset_export import SPLITS, data_file, front_matter, render_readme

    folder.mkdir(parents=True, exist_ok=True)
    for split in SPLITS:
        (folder / config).mkdir(exist_ok=True)
        pq.write_table(pa.table({"text": ["abc"]}), folder / data_file(config, split))
    front = front_matter([config], config, **script.EXPORT.card_metadata)
    (folder / "README.md").write_text(render_readme(front, "# an earlier export\n"))
    (folder / "notes.txt").write_text("my notes\n")
    return folder


def tiny_checkpoint(folder: Path) -> Path:
    """A `save_pretrained` folder of an untrained tiny Transformer for RegBench (no training needed)."""
    from hf_icl.architectures import config_for
    from hf_icl.architectures.heads import build_model

    model = build_model("causal_lm", config_for("transformer", "tiny", vocab_size=20))
    model.save_pretrained(folder)
    return folder
