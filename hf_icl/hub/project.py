"""hf_icl's own links, read from ``pyproject.toml``'s ``[project.urls]`` (cards link to the repository)."""

from __future__ import annotations

import functools
from importlib import metadata
from pathlib import Path

PROJECT_URL_KEYS = ("Repository", "Homepage", "Source")
"""Which ``[project.urls]`` entry cards link to, first present wins."""


@functools.cache
def project_url() -> str:
    """hf_icl's repository URL, from ``pyproject.toml``'s ``[project.urls]``: read from the source tree's
    ``pyproject.toml`` when the package runs from one (an editable install keeps the metadata of its install time),
    else from the installed package's metadata (``Project-URL``)."""
    urls = {}
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    try:
        import tomllib  # Python >= 3.11; on 3.10 the installed metadata is read
    except ModuleNotFoundError:
        tomllib = None
    if tomllib is not None and pyproject.is_file():
        with open(pyproject, "rb") as handle:
            project = tomllib.load(handle).get("project", {})
        if project.get("name") == "hf-icl":
            urls = project.get("urls", {})
    if not urls:
        try:
            entries = metadata.metadata("hf-icl").get_all("Project-URL") or []
        except metadata.PackageNotFoundError:
            entries = []
        urls = dict(entry.split(", ", 1) for entry in entries if ", " in entry)
    url = next((urls[key] for key in PROJECT_URL_KEYS if key in urls), None) or next(iter(urls.values()), None)
    if url is None:
        raise ValueError("pyproject.toml's [project.urls] lists no URL for hf-icl (Repository, Homepage or Source)")
    return url
