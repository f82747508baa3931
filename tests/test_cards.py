"""Model and dataset cards are `huggingface_hub` cards: their metadata round-trips through `huggingface_hub`'s own
parser (`ModelCard.load`, `DatasetCard.load`): `model-index` results with the baselines beside the model's values,
the dataset card's `configs:`, and the project link from `pyproject.toml`'s `[project.urls]`."""

from __future__ import annotations

from pathlib import Path

import datasets
import tomllib
import torch
from huggingface_hub import DatasetCard, ModelCard
from transformers import AutoModelForCausalLM

import hf_icl
from hf_icl.export import main as export_main
from hf_icl.hub import render_model_card
from hf_icl.hub.project import project_link, project_url
from hf_icl.tasks import family_of

ROOT = Path(__file__).resolve().parents[1]
METRICS = {
    "model": {"accuracy": 0.9, "tvd": 0.21},
    "baselines": {"2-gram (paper)": {"accuracy": 0.82, "tvd": 0.33}, "3-gram (paper)": {"accuracy": 0.93, "tvd": 0.26}},
    "num_rows": 500,
}


def pyproject_urls() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as handle:
        return tomllib.load(handle)["project"].get("urls", {})


def test_the_project_url_is_pyprojects_and_none_is_guessed():
    """The project has no public URL yet: pyproject.toml lists none, and cards name hf_icl without a link."""
    urls = pyproject_urls()
    assert project_url() == (urls.get("Repository") or next(iter(urls.values()), None))
    assert project_link() == (f"[hf_icl]({project_url()})" if project_url() else "hf_icl")


def test_a_listed_url_becomes_the_cards_link(monkeypatch):
    from hf_icl.hub import project

    monkeypatch.setattr(project, "project_url", lambda: "https://example.org/hf_icl")
    assert project.project_link() == "[hf_icl](https://example.org/hf_icl)"


def test_model_card_metadata_round_trips_through_huggingface_hub(tmp_path):
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(hf_icl.config_for("transformer", "tiny", vocab_size=20))
    arguments = {"task": "regbench", "architecture": "transformer", "n_train": 2500, "task_seed": 0}
    text = render_model_card(model, METRICS, arguments, family_of("regbench"), dataset_config="n2500")
    (tmp_path / "README.md").write_text(text)
    card = ModelCard.load(tmp_path / "README.md")

    data = card.data
    assert data.library_name == "transformers" and data.pipeline_tag == "text-generation"
    assert {"hf_icl", "transformer", "regbench"} <= set(data.tags)
    assert data.datasets == ["hf_icl/regbench"] and data.metrics == ["accuracy", "tvd"]
    results = {result.metric_type: result for result in data.eval_results}
    assert set(results) == {"accuracy", "tvd"}
    for name, result in results.items():
        assert result.metric_value == METRICS["model"][name]
        assert result.dataset_type == "hf_icl/regbench" and result.dataset_config == "n2500"
        assert result.dataset_split == "test" and result.task_name == "regbench"
        assert result.metric_args == {
            "baselines": {baseline: row[name] for baseline, row in METRICS["baselines"].items()}
        }
        assert result.source_url == project_url()
        assert result.source_name == ("hf_icl evaluator" if project_url() else None)
    assert data.model_name == card.data.to_dict()["model-index"][0]["name"]
    assert f"trained with\n{project_link()} on" in card.text and "| this model | 0.9000 |" in card.text
    assert "https://github.com/)" not in text


def test_dataset_card_metadata_round_trips_through_huggingface_hub(tmp_path):
    folder = tmp_path / "regbench"
    export_main(["regbench", "--output", str(folder), "--configs", "n150", "n500", "--n-train", "2", "--n-test", "2",
                 "--n-validation", "2", "--cache-dir", str(tmp_path / "cache")])  # fmt: skip
    card = DatasetCard.load(folder / "README.md")
    configs = card.data.to_dict()["configs"]
    assert [entry["config_name"] for entry in configs] == ["n150", "n500"]
    for entry in configs:
        assert {f["split"]: f["path"] for f in entry["data_files"]} == {
            split: f"{entry['config_name']}/{split}-00000-of-00001.parquet" for split in ("train", "validation", "test")
        }
    assert card.data.license and card.data.pretty_name
    assert f"Written by {project_link()} (" in card.text
    # what the Hub and `datasets` read from the same card
    assert datasets.load_dataset(str(folder), "n500", split="test").num_rows == 2
