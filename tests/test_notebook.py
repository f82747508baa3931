"""docs/notebooks/quickstart.ipynb runs top to bottom in a fresh kernel (nbclient): it trains, prints the table
against the baselines, draws the attention map and generates through `pipeline`. No timed assertion: the per-cell
timeout only stops a hung kernel."""

from __future__ import annotations

import os
import re
from pathlib import Path

import nbformat  # in the dev extra, with nbclient and ipykernel: a missing package fails here, it does not skip
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "docs" / "notebooks" / "quickstart.ipynb"
CELL_TIMEOUT_S = 900  # a hung kernel fails here, not the CI's limit


def outputs(cell) -> str:
    return "".join(
        o.get("text", "") + "".join(o.get("data", {}).get("text/plain", "")) for o in cell.get("outputs", [])
    )


def test_the_quickstart_notebook_runs_top_to_bottom(tmp_path, monkeypatch):
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), "commit it unexecuted"
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    client = NotebookClient(
        notebook, timeout=CELL_TIMEOUT_S, kernel_name="python3", resources={"metadata": {"path": tmp_path}}
    )
    client.execute()
    text = "\n".join(outputs(cell) for cell in notebook.cells if cell.cell_type == "code")
    assert "| tiny transformer |" in text and "| 3-gram (paper) |" in text
    assert "best baseline" in text
    assert any("image/png" in o.get("data", {}) for cell in notebook.cells for o in cell.get("outputs", []))
    generation = re.search(r"prompt: +(\S+)\ngenerated: +(\S+)", text)
    assert generation, text[-2000:]
    prompt, generated = generation.groups()
    assert generated.startswith(prompt) and len(generated) > len(prompt)
