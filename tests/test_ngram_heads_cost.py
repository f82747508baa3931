"""`experiments/ngram_heads_cost.py`: an n-gram-head row is timed against its own base, on its task's real batch."""

import pytest
import yaml
from script_loader import load_script


@pytest.fixture(scope="module")
def ngram_heads_cost():
    return load_script("experiments/ngram_heads_cost.py")


def row_config(path, **overrides):
    config = {"task": "regbench", "n_train": 8, "architecture": "retnet", "preset": "tiny", "batch_size": 4,
              "shared_overrides": {"position_embedding": "rope"},
              "overrides": {"num_hidden_layers": 2, **overrides}}  # fmt: skip
    path.write_text(yaml.dump(config))
    return str(path)


def test_the_base_is_the_row_without_its_heads_on_the_rows_own_batch(ngram_heads_cost, tmp_path):
    args, batch, configs = ngram_heads_cost.real_batch_and_configs(
        row_config(tmp_path / "row.yaml", ngram_heads="1:1,2,3")
    )
    assert args.architecture == "retnet" and batch["input_ids"].shape[0] == 4
    with_heads, base = configs["with heads"].to_dict(), configs["base"].to_dict()
    differing = {key for key in with_heads.keys() | base.keys() if with_heads.get(key) != base.get(key)}
    assert differing == {"ngram_heads"} and not base["ngram_heads"]
    assert with_heads["num_hidden_layers"] == 2 and with_heads["vocab_size"] == base["vocab_size"] > 4


def test_a_config_without_heads_is_refused_before_any_timing(ngram_heads_cost, tmp_path):
    with pytest.raises(ValueError, match="overrides has no 'ngram_heads'"):
        ngram_heads_cost.real_batch_and_configs(row_config(tmp_path / "base.yaml"))


def test_a_bad_base_cost_is_one_line_naming_the_argument(ngram_heads_cost, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        ngram_heads_cost.main([row_config(tmp_path / "row.yaml", ngram_heads="1:1,2,3"), "--base-cost", "0",
                               "--output", str(tmp_path / "out.json")])  # fmt: skip
    assert exit_info.value.code == 2
    assert "argument --base-cost: 0.0 is not a positive number of CPU seconds" in capsys.readouterr().err
    assert not (tmp_path / "out.json").exists()
