"""Checkpoints and dataset exports saved by the previous release still load, with identical outputs.

The folders under `tests/fixtures/previous_release/` were written by the code before mixers, architectures and task
families declared themselves (their configs hold every mixer's fields flat, in one shared config).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import datasets
import pytest
import torch
from transformers import AutoConfig, AutoModelForCausalLM

import hf_icl

FIXTURES = Path(__file__).parent / "fixtures" / "previous_release"
EXPECTED = json.loads((FIXTURES / "expected_outputs.json").read_text())
ARCHS = sorted(name for name in EXPECTED["outputs"] if name != "regression")


@pytest.mark.parametrize("arch", ARCHS)
def test_old_checkpoint_loads_with_identical_logits(arch):
    folder = FIXTURES / "checkpoints" / arch
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    assert type(model).__module__.startswith("hf_icl")
    with torch.no_grad():
        logits = model(torch.tensor(EXPECTED["input_ids"])).logits
    torch.testing.assert_close(logits, torch.tensor(EXPECTED["outputs"][arch]), atol=1e-5, rtol=0)
    config = AutoConfig.from_pretrained(folder)
    assert config.to_dict()["mixer_types"] == json.loads((folder / "config.json").read_text())["mixer_types"]


def test_old_regression_checkpoint_loads():
    model = hf_icl.AutoModelForInContextRegression.from_pretrained(FIXTURES / "checkpoints" / "regression").eval()
    with torch.no_grad():
        predictions = model(xs=torch.tensor(EXPECTED["xs"]), ys=torch.tensor(EXPECTED["ys"])).predictions
    torch.testing.assert_close(predictions, torch.tensor(EXPECTED["outputs"]["regression"]), atol=1e-5, rtol=0)


def test_old_checkpoint_resaves_with_the_current_code(tmp_path):
    model = AutoModelForCausalLM.from_pretrained(FIXTURES / "checkpoints" / "gla").eval()
    model.save_pretrained(tmp_path / "gla")
    again = AutoModelForCausalLM.from_pretrained(tmp_path / "gla").eval()
    with torch.no_grad():
        logits = again(torch.tensor(EXPECTED["input_ids"])).logits
    torch.testing.assert_close(logits, torch.tensor(EXPECTED["outputs"]["gla"]), atol=1e-5, rtol=0)


REMOTE = """
import json, sys, torch
sys.modules["hf_icl"] = None
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained(sys.argv[1], trust_remote_code=True).eval()
with torch.no_grad():
    print(json.dumps(model(torch.tensor(json.loads(sys.argv[2]))).logits.tolist()))
"""


def test_old_checkpoint_still_loads_its_own_shipped_code(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_MODULES_CACHE": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    folder, ids = FIXTURES / "checkpoints" / "transformer", json.dumps(EXPECTED["input_ids"])
    result = subprocess.run([sys.executable, "-c", REMOTE, str(folder), ids], capture_output=True, text=True,
                            env=env, timeout=300, stdin=subprocess.DEVNULL)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    logits = torch.tensor(json.loads(result.stdout.strip().splitlines()[-1]))
    torch.testing.assert_close(logits, torch.tensor(EXPECTED["outputs"]["transformer"]), atol=1e-5, rtol=0)


def test_old_dataset_export_loads_and_matches_the_generator(tmp_path):
    exported = datasets.load_dataset(str(FIXTURES / "datasets" / "regbench"), "n150", cache_dir=str(tmp_path))
    assert {name: len(split) for name, split in exported.items()} == {"train": 6, "validation": 2, "test": 3}
    fresh = hf_icl.load_task("regbench", config_name="n150", n_train=6, n_test=3, n_validation=2, seed=0,
                             cache_dir=str(tmp_path / "fresh"))  # fmt: skip
    for split in ("train", "validation", "test"):
        assert exported[split]["text"] == fresh[split]["text"]
