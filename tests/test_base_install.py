"""The base install works without any optional package, and a failed export loses nothing.

`pip install -e .` has no Triton, mamba-ssm, flash-linear-attention or causal-conv1d; the subprocesses here hide
them, and numba (a base dependency, but the guards must hold where it fails to install) from the import system, as a
machine without them would: `find_spec` answers `None` and `importlib.metadata` finds no distribution. `.ci/run`
checks the same for real, in a fresh virtual environment, with the README's own quickstart.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import hf_icl
import hf_icl.training.loop as loop
from hf_icl.modeling.decoder import ICLPreTrainedModel
from hf_icl.training import main

ROOT = Path(__file__).resolve().parents[1]
OPTIONAL_PACKAGES = ("numba", "triton", "mamba_ssm", "fla", "causal_conv1d", "sklearn", "xgboost", "scipy", "lm_eval",
                     "nnsight", "transformer_lens", "wandb", "nbclient")  # fmt: skip
OPTIONAL_DISTRIBUTIONS = ("numba", "triton", "mamba-ssm", "flash-linear-attention", "causal-conv1d", "scikit-learn",
                          "xgboost", "xgboost-cpu", "scipy", "lm-eval", "nnsight", "transformer-lens", "wandb",
                          "nbclient")  # fmt: skip

HIDE_OPTIONAL = textwrap.dedent(
    f"""
    import importlib.machinery, importlib.metadata, sys
    HIDDEN = set({OPTIONAL_PACKAGES!r}) | set(sys.argv[1].split(",") if sys.argv[1] else [])
    HIDDEN_DISTRIBUTIONS = {{name.replace("-", "_") for name in {OPTIONAL_DISTRIBUTIONS!r}}}

    class Hide:  # stands in for the path finder: the hidden packages are simply not installed
        @classmethod
        def find_spec(cls, name, path=None, target=None):
            if name.partition(".")[0] in HIDDEN:
                return None
            return importlib.machinery.PathFinder.find_spec(name, path, target)

        @classmethod
        def find_distributions(cls, context=importlib.metadata.DistributionFinder.Context()):
            for dist in importlib.machinery.PathFinder.find_distributions(context):
                if (dist.metadata["Name"] or "").lower().replace("-", "_") not in HIDDEN_DISTRIBUTIONS:
                    yield dist

        @classmethod
        def invalidate_caches(cls):
            importlib.machinery.PathFinder.invalidate_caches()

    sys.meta_path[:] = [Hide if f is importlib.machinery.PathFinder else f for f in sys.meta_path]
    if "hf_icl" in HIDDEN:  # an editable install may reach hf_icl through its own finder
        sys.modules["hf_icl"] = None
    del sys.argv[1]
    """
)

SAVE_ALL = HIDE_OPTIONAL + textwrap.dedent(
    """
    import json, torch, hf_icl
    from transformers import AutoModelForCausalLM
    root = sys.argv[1]
    ids = torch.tensor([[0, 3, 5, 7, 19, 2, 4, 4]])
    out = {}
    for arch in hf_icl.list_architectures():
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(hf_icl.config_for(arch, "tiny", vocab_size=20)).eval()
        model.save_pretrained(f"{root}/{arch}")
        with torch.no_grad():
            out[arch] = model(ids).logits.tolist()
    print(json.dumps(out))
    """
)

LOAD_ALL = HIDE_OPTIONAL + textwrap.dedent(
    """
    import json, torch
    from transformers import AutoModelForCausalLM
    root, archs = sys.argv[1], sys.argv[2].split(",")
    ids = torch.tensor([[0, 3, 5, 7, 19, 2, 4, 4]])
    out = {}
    for arch in archs:
        model = AutoModelForCausalLM.from_pretrained(f"{root}/{arch}", trust_remote_code=True).eval()
        assert not type(model).__module__.startswith("hf_icl"), type(model).__module__
        with torch.no_grad():
            out[arch] = model(ids).logits.tolist()
        out[arch + ":generate"] = model.generate(ids[:, :3], max_new_tokens=3, do_sample=False).shape[1]
    print(json.dumps(out))
    """
)

TRAIN = HIDE_OPTIONAL + textwrap.dedent(
    """
    import runpy
    sys.argv = [sys.argv[1], *sys.argv[2:]]
    runpy.run_path(sys.argv[0], run_name="__main__")
    """
)


def run_hidden(script: str, *args: str, hide: str = "", tmp_path: Path, timeout: int = 600):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_MODULES_CACHE": str(tmp_path / "modules"), "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-c", script, hide, *args],
        capture_output=True, text=True, timeout=timeout, env=env, cwd=tmp_path, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_the_hider_hides():
    probe = HIDE_OPTIONAL + "import importlib.util; print(importlib.util.find_spec('numba'), end=' ')\ntry:\n"
    probe += "    import numba\nexcept ImportError:\n    print('missing')\n"
    result = subprocess.run([sys.executable, "-c", probe, ""], capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "None missing", result.stderr[-2000:]


def test_every_architecture_saves_and_loads_without_optional_packages(tmp_path):
    saved = run_hidden(SAVE_ALL, str(tmp_path / "saved"), tmp_path=tmp_path)
    assert saved.returncode == 0, saved.stderr[-3000:]
    expected = json.loads(saved.stdout.strip().splitlines()[-1])
    archs = sorted(expected)
    assert archs == sorted(hf_icl.list_architectures())
    loaded = run_hidden(LOAD_ALL, str(tmp_path / "saved"), ",".join(archs), hide="hf_icl", tmp_path=tmp_path)
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    remote = json.loads(loaded.stdout.strip().splitlines()[-1])
    for arch in archs:
        torch.testing.assert_close(torch.tensor(remote[arch]), torch.tensor(expected[arch]), atol=1e-5, rtol=0)
        assert remote[arch + ":generate"] == 6


def test_training_run_without_optional_packages_finishes(tmp_path):
    """Mamba takes the compiled scan when numba is there: without it, the run must still train, evaluate and save."""
    output = tmp_path / "run"
    args = ["--architecture", "mamba", "--preset", "tiny", "--max-steps", "3", "--warmup-steps", "1",
            "--n-train", "100", "--task-option", "n_test=8", "--task-option", "n_validation=4",
            "--report-to", "none", "--threads", "1", "--output-dir", str(output)]  # fmt: skip
    result = run_hidden(TRAIN, str(ROOT / "train.py"), *args, tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    for name in ("metrics.json", "summary.md", "training_curves.png", "model/config.json", "model/model.safetensors"):
        assert (output / name).is_file(), name
    assert not list(output.glob(".tmp-*"))


SMALL_RUN = ["--preset", "tiny", "--report-to", "none", "--threads", "1", "--warmup-steps", "1", "--max-steps", "2",
             "--n-train", "100", "--task-option", "n_test=8", "--task-option", "n_validation=4"]  # fmt: skip


def test_failed_export_keeps_the_results_and_resume_retries_only_the_export(tmp_path, monkeypatch, capsys):
    output = tmp_path / "run"

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(ICLPreTrainedModel, "save_pretrained", full_disk)
        with pytest.raises(OSError, match="No space left"):
            main([*SMALL_RUN, "--output-dir", str(output)])
    for name in ("metrics.json", "summary.md", "training_curves.png"):
        assert (output / name).is_file(), name
    assert not (output / "model").exists()
    assert not list(output.glob(".tmp-*")), "a failed export leaves no temporary folder"
    metrics_before = (output / "metrics.json").read_bytes()

    def no_second_evaluation(*args, **kwargs):
        raise AssertionError("the resumed run evaluated again")

    monkeypatch.setattr(loop, "EvalRequest", no_second_evaluation)
    capsys.readouterr()
    metrics = main([*SMALL_RUN, "--output-dir", str(output), "--resume"])
    assert "exporting the model only" in capsys.readouterr().out
    assert (output / "model" / "model.safetensors").is_file() and (output / "model" / "README.md").is_file()
    assert (output / "metrics.json").read_bytes() == metrics_before
    assert metrics["test"] == json.loads(metrics_before)["test"]


def quickstart_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("ci_quickstart", ROOT / ".ci" / "quickstart.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_quickstart_is_the_base_install_and_its_snippet_opens_the_default_run():
    """`.ci/quickstart.py` runs these for real in a fresh venv; here, that what it reads is what the README says."""
    from hf_icl.training import parse_args

    quickstart = quickstart_module()
    *installs, launch = quickstart.quickstart_commands()
    assert [command[:2] for command in installs] == [["pip", "install"]] * len(installs)
    assert ["-e", "."] in [command[2:] for command in installs], "the quickstart installs the package, no extras"
    assert launch == ["accelerate", "launch", "train.py"]
    snippet = quickstart.loading_snippet()
    default_model = f"{parse_args([]).resolved_output_dir()}/model"
    assert snippet.count(f'"{default_model}"') == 2, f"the snippet must open {default_model}"
