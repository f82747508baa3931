"""`experiments/zoo_configs.py`: a finished zoo search becomes the model's config by its spec's rule."""

import json
from pathlib import Path

import pytest
import yaml
from script_loader import load_script

from hf_icl.sweep import expand, load_spec
from hf_icl.training.config_files import load_yaml_config

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def zoo_configs():
    return load_script("experiments/zoo_configs.py")


def fabricate_search(folder: Path, cpu_s: float, selected: int = 1) -> Path:
    """A search folder as `hf_icl.sweep` leaves it: best.yaml (the base point with the trial's setting, search-only
    keys included), trials.json and trials.md."""
    folder.mkdir(parents=True)
    recipe = yaml.safe_load((ROOT / "experiments/configs/regbench_cpu.yaml").read_text())
    best = {**recipe, "architecture": "retnet", "lr": 0.002, "max_steps": 1500, "eval_every": 250, "threads": 1,
            "checkpoint_every": 250}  # fmt: skip
    (folder / "best.yaml").write_text(f"# Selected by the search in {folder} (trial {selected}); x\n" + yaml.dump(best))
    trials = [
        {"trial": 0, "state": "pruned", "steps": 500, "train_cpu_s": 100.0, "setting": {"lr": 0.01},
         "validation": {"accuracy": 0.5}, "value": 0.5},
        {"trial": 1, "state": "complete", "steps": 1500, "train_cpu_s": cpu_s, "setting": {"lr": 0.002},
         "validation": {"accuracy": 0.8, "tvd": 0.4}, "value": 0.8},
    ]  # fmt: skip
    (folder / "trials.json").write_text(json.dumps(trials))
    (folder / "trials.md").write_text("| trial |\n")
    return folder


@pytest.mark.parametrize(
    ("cpu_s_per_step", "steps"),
    # 1,800 CPU s at 1.05x the cost: 3,000 steps fit up to 0.571 s; Mamba's trial (1.152 s) fits 1,000, not 1,500
    [(0.5, 3000), (0.57, 3000), (0.6, 2500), (0.75, 2000), (0.72, 2000), (1.152, 1000), (1.5, 1000)],
)
def test_budget_steps_by_hand(zoo_configs, cpu_s_per_step, steps):
    assert zoo_configs.budget_steps(3000, cpu_s_per_step) == steps


def test_budget_below_one_grain_is_refused(zoo_configs):
    with pytest.raises(ValueError, match="fewer than 500 steps"):
        zoo_configs.budget_steps(3000, 4.0)


def test_written_config_restores_the_recipe_and_loads(zoo_configs, tmp_path):
    search = fabricate_search(tmp_path / "search", cpu_s=1500 * 0.75)  # 0.75 CPU s per step: 2,000 steps fit
    out, trials = tmp_path / "configs", tmp_path / "trials"
    seeds = tmp_path / "seeds.yaml"
    arguments = [str(search), "--output", str(out), "--trials", str(trials), "--ngram-heads", "retnet",
                 "--seeds-spec", str(seeds)]  # fmt: skip
    assert zoo_configs.main(arguments) == 0
    config = yaml.safe_load((out / "retnet.yaml").read_text())
    assert (config["max_steps"], config["threads"], config["checkpoint_every"], config["lr"]) == (2000, 1, 500, 0.002)
    assert "eval_every" not in config  # the search's validation cadence is not the recipe's
    assert "trial 1 of the search" in (out / "retnet.yaml").read_text()
    with_heads = yaml.safe_load((out / "retnet_ngh123.yaml").read_text())
    assert with_heads["overrides"]["ngram_heads"] == "1:1,2,3"
    assert {k: v for k, v in with_heads.items() if k != "overrides"} == {
        k: v for k, v in config.items() if k != "overrides"
    }
    assert (trials / "retnet" / "trials.json").is_file() and (trials / "retnet" / "best.yaml").is_file()
    for name in ("retnet.yaml", "retnet_ngh123.yaml"):
        values = load_yaml_config(out / name)  # train.py --config's checks: every field known and in range
        assert values["architecture"] == "retnet" and values["max_steps"] == 2000
    points = expand(load_spec(seeds))  # one experiment: every config, seeds 0-2, each point its config as written
    assert [p.name for p in points][:3] == ["variant=retnet,seed=0", "variant=retnet,seed=1", "variant=retnet,seed=2"]
    assert len(points) == 6 and points[3].arguments["overrides"]["ngram_heads"] == [
        {"layer": 1, "orders": [1, 2, 3], "replace": False}
    ]
    assert {k: v for k, v in points[0].arguments.items() if k not in ("seed", "output_dir")} == load_yaml_config(
        out / "retnet.yaml"
    )


def test_unfinished_search_is_refused_before_any_write(zoo_configs, tmp_path, capsys):
    finished = fabricate_search(tmp_path / "done", cpu_s=1000.0)
    running = tmp_path / "running"
    running.mkdir()
    out = tmp_path / "configs"
    assert zoo_configs.main([str(finished), str(running), "--output", str(out), "--trials", str(tmp_path / "t")]) == 2
    assert "no best.yaml" in capsys.readouterr().err
    assert not out.exists()


def test_ngram_heads_row_fits_the_budget_at_its_own_cost(zoo_configs, tmp_path, capsys):
    """`--ngram-heads-cost retnet=1.25`: the row with heads takes the most steps that fit 1,800 CPU s at 1.25 s a step
    (1,000), its base keeps the base trial's (1,500 at 1.069 s); a bad item is refused before any write."""
    search = fabricate_search(tmp_path / "search", cpu_s=1500 * 1.069)
    out = tmp_path / "configs"
    common = [str(search), "--output", str(out), "--trials", str(tmp_path / "t"), "--ngram-heads", "retnet"]
    assert zoo_configs.main([*common, "--ngram-heads-cost", "retnet=1.25"]) == 0
    assert yaml.safe_load((out / "retnet.yaml").read_text())["max_steps"] == 1500
    text = (out / "retnet_ngh123.yaml").read_text()
    assert yaml.safe_load(text)["max_steps"] == 1000 and "this row's 1.250 s/step" in text
    for bad in ("gla=1.2", "retnet=fast", "retnet=0"):
        assert zoo_configs.main([*common, "--output", str(tmp_path / bad), "--ngram-heads-cost", bad]) == 2
        assert "--ngram-heads-cost" in capsys.readouterr().err and not (tmp_path / bad).exists()
