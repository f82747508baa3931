"""`hf_icl.report.studies`: a study's `study.json` is read and checked before the report writes anything, and the
report lists every declared study with links that resolve from the report's folder."""

import json
import re

import pytest

from hf_icl.report.build import study_row
from hf_icl.report.studies import find_studies, read_study


def declare(folder, **fields):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "README.md").write_text("# a study\n")
    (folder / "numbers.json").write_text("{}\n")
    record = {"title": "T", "finding": "F 0.5", "page": "README.md", "evidence": ["numbers.json"], **fields}
    (folder / "study.json").write_text(json.dumps({k: v for k, v in record.items() if v is not None}))
    return folder / "study.json"


def test_studies_are_found_below_the_paths_once_each_and_their_links_resolve(tmp_path):
    declare(tmp_path / "results" / "b_study")
    declare(tmp_path / "results" / "a_study" / "deeper")
    studies = find_studies([tmp_path / "results", tmp_path / "results" / "b_study"])
    assert [s.folder.name for s in studies] == ["deeper", "b_study"]
    row = study_row(studies[1], tmp_path / "results")
    assert row == ["[T](b_study/README.md)", "F 0.5", "[numbers.json](b_study/numbers.json)"]
    for target in re.findall(r"\]\(([^)]+)\)", row[0] + row[2]):
        assert (tmp_path / "results" / target).is_file()


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"finding": None}, "missing field(s) finding"),
        ({"evidence": []}, "field 'evidence' must be a non-empty list"),
        ({"evidence": ["absent.json"]}, "'absent.json' (in 'page' or 'evidence') does not exist"),
        ({"page": "absent.md"}, "'absent.md' (in 'page' or 'evidence') does not exist"),
    ],
)
def test_a_bad_declaration_names_the_field(tmp_path, fields, message):
    path = declare(tmp_path / "study", **fields)
    with pytest.raises(ValueError, match=re.escape(message)):
        read_study(path)


def test_the_committed_studies_are_valid_and_in_the_committed_report():
    from pathlib import Path

    results = Path(__file__).resolve().parents[1] / "docs" / "results"
    studies = find_studies([results])
    assert {s.folder.name for s in studies} >= {"mqar_state", "ngram_maps"}
    report = (results / "REPORT.md").read_text(encoding="utf-8")
    assert "## Beyond the papers" in report
    for study in studies:
        assert study.finding in report
