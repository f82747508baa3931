"""Studies beyond the papers: results no paper's finding covers (recall against state size, n-gram heads read off
recurrent models' exact maps), listed in the report beside the papers' verdicts.

A study declares itself with a `study.json` in its results folder:

    {"title": "...", "finding": "...", "page": "README.md", "evidence": ["mqar_state.json"]}

`finding` is the study's conclusion in one or two sentences, its numbers taken from the `evidence` files (paths
relative to the study's folder, each of which must exist); `page` is the study's write-up. The report links both.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

STUDY_FILE = "study.json"
FIELDS = ("title", "finding", "page", "evidence")


@dataclass(frozen=True)
class Study:
    """One study's declaration.

    Args:
        folder: the folder holding its `study.json`.
        title, finding: what it asked and what it found.
        page: its write-up, relative to `folder`.
        evidence: the committed files its numbers come from, relative to `folder`.
    """

    folder: Path
    title: str
    finding: str
    page: str
    evidence: tuple[str, ...]


def read_study(path: Path) -> Study:
    """The study declared by `path` (a `study.json`).

    Raises:
        ValueError: a field is missing or of the wrong type, or a file it names does not exist.
    """
    record = json.loads(path.read_text(encoding="utf-8"))
    missing = [name for name in FIELDS if name not in record]
    if missing:
        raise ValueError(f"{path}: missing field(s) {', '.join(missing)} (a study needs {', '.join(FIELDS)})")
    if not isinstance(record["evidence"], list) or not record["evidence"]:
        raise ValueError(f"{path}: field 'evidence' must be a non-empty list of files next to it")
    for name in (record["page"], *record["evidence"]):
        if not (path.parent / name).is_file():
            raise ValueError(f"{path}: '{name}' (in 'page' or 'evidence') does not exist in {path.parent}")
    return Study(path.parent, record["title"], record["finding"], record["page"], tuple(record["evidence"]))


def find_studies(paths: list[str | Path]) -> list[Study]:
    """Every study declared at or below `paths` (folders; files are skipped), in path order, each once."""
    files = sorted({f.resolve() for p in map(Path, paths) if p.is_dir() for f in p.rglob(STUDY_FILE)})
    return [read_study(f) for f in files]
