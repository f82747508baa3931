"""hf_icl's own links, read from ``pyproject.toml``'s ``[project.urls]``; the project has no public URL yet, so
cards name hf_icl without a link until one is listed there."""

from __future__ import annotations

import functools
from importlib import metadata
from pathlib import Path

PROJECT_URL_KEYS = ("Repository", "Homepage", "Source")
"""Which ``[project.urls]`` entry cards link to, first present wins."""


@functools.cache
def project_url() -> str | None:
    """hf_icl's repository URL from ``pyproject.toml``'s ``[project.urls]``, or `None` when it lists none. Read from the
    source tree's ``pyproject.toml`` when the package runs from one (an editable install keeps the metadata of its
    install time), else from the installed package's metadata (``Project-URL``)."""
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    try:
        import tomllib  # Python >= 3.11; on 3.10 the installed metadata is read
    except ModuleNotFoundError:
        tomllib = None
    project = {}
    if tomllib is not None and pyproject.is_file():
        with open(pyproject, "rb") as handle:
            project = tomllib.load(handle).get("project", {})
    if project.get("name") == "hf-icl":
        urls = project.get("urls", {})
    else:
        try:
            entries = metadata.metadata("hf-icl").get_all("Project-URL") or []
        except metadata.PackageNotFoundError:
            entries = []
        urls = dict(entry.split(", ", 1) for entry in entries if ", " in entry)
    return next((urls[key] for key in PROJECT_URL_KEYS if key in urls), None) or next(iter(urls.values()), None)


def project_link() -> str:
    """`[hf_icl](URL)` for a card's text, or plain `hf_icl` while the project lists no URL."""
    url = project_url()
    return f"[hf_icl]({url})" if url else "hf_icl"
