"""The registry tables of `docs/architecture.md` and `docs/interpretability.md` are what the registries hold (nobody
keeps a copy by hand)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

import hf_icl
from hf_icl.pages.registry_tables import TABLES, main

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGE = DOCS / "architecture.md"
README = DOCS.parent / "README.md"
PAGES = {"maps": DOCS / "interpretability.md", "zoo": README, "tasks": README}  # tables on another page than PAGE


def _in_a_fresh_process(code):
    """Other tests register throwaway units in their worker's registries; the shipped registries are a fresh
    process's."""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


PAGE_FILES = sorted(str(page) for page in {PAGE, *PAGES.values()})


@pytest.fixture(scope="module")
def shipped():
    """What one fresh process (`_in_a_fresh_process`) renders of every page and names of the shipped registries:
    `{"pages": {page: text}, "names": [architectures, mixers, task families]}`."""
    code = ("import json, sys, hf_icl; from hf_icl.pages.registry_tables import render; "
            f"pages = {{p: render(open(p, encoding='utf-8').read()) for p in {PAGE_FILES!r}}}; "
            "names = [*hf_icl.list_architectures(), *hf_icl.mixers.list_mixers(), *hf_icl.tasks.FAMILIES]; "
            "json.dump({'pages': pages, 'names': names}, sys.stdout)")  # fmt: skip
    return json.loads(_in_a_fresh_process(code))


def test_the_committed_pages_equal_their_regeneration(shipped):
    for name in TABLES:
        assert f"<!-- registry: {name} start -->" in PAGES.get(name, PAGE).read_text(encoding="utf-8"), name
    for page in PAGE_FILES:
        stale = f"run: python -m hf_icl.pages.registry_tables --write {page}"
        assert shipped["pages"][page] == Path(page).read_text(encoding="utf-8"), stale


def test_every_registered_unit_is_in_the_tables(shipped):
    text = PAGE.read_text(encoding="utf-8")
    names = shipped["names"]
    assert len(names) > 20
    for name in names:
        assert f"| `{name}` |" in text, name


def test_readme_tables_name_every_architecture_block_feature_and_task():
    from hf_icl.pages.registry_tables import tasks_table, zoo_table

    zoo, tasks = zoo_table(), tasks_table()
    for name in hf_icl.list_architectures():
        assert f"| `{name}` |" in zoo, name
    assert "block feature `ngram_heads` (`--ngram-heads`)" in zoo and "| 100,096 |" in zoo  # the tiny Transformer
    for family in hf_icl.tasks.FAMILIES.values():
        for task in family.tasks:
            assert f"`{task}`" in tasks, task
    assert "Accuracy (share of positions" in tasks  # RegBench's declared metric, whole first sentence


def test_first_sentence_keeps_abbreviations():
    from hf_icl.pages.registry_tables import _first_sentence

    assert _first_sentence("Mamba (P1, eq. 17; et al. 2024). Second one.") == "Mamba (P1, eq. 17; et al. 2024)."
    assert _first_sentence("A | B, e.g. C. D") == "A \\| B, e.g. C."
    assert _first_sentence(None) == ""


def test_a_stale_block_is_rewritten_and_check_fails_on_it(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("intro\n<!-- registry: mixers start -->\n| old | table |\n<!-- registry: mixers end -->\nend\n")
    assert main(["--check", str(page)]) == 1
    assert main(["--write", str(page)]) == 0 and main(["--check", str(page)]) == 0
    text = page.read_text()
    assert text.startswith("intro\n") and text.endswith("end\n") and "| old |" not in text and "| `gla` |" in text


def test_bad_page_is_one_line(tmp_path):
    from cli_entry_points import call

    outcome = call(main, ["--check", str(tmp_path / "missing.md")])
    assert outcome.escaped is None and outcome.status == 2, (outcome.escaped, outcome.err)
    last = outcome.err.strip().splitlines()[-1]  # argparse's usage lines, then the error
    assert "--check" in last and "missing.md" in last and "Traceback" not in outcome.err, outcome.err
