"""Outside code plugs in with no edit under `hf_icl/`: a plug-in written to a folder outside the repository registers
a mixer, an architecture and a continuous-input task family, and every entry point takes it.

The plug-in is `tests/plugin_example/hf_icl_toy_plugin/`, copied into a temporary folder first (so nothing of the
repository's own paths makes it importable).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = Path(__file__).parent / "plugin_example" / "hf_icl_toy_plugin"
XS = torch.linspace(-1, 1, 2 * 5 * 2).reshape(2, 5, 2).tolist()  # (B, N, d_x)


def run(command, tmp_path, env=None, timeout=900):
    base = {key: value for key, value in os.environ.items() if key != "HF_ICL_PLUGINS"}
    env = {**base, "OMP_NUM_THREADS": "1", "HF_MODULES_CACHE": str(tmp_path / "modules"), **(env or {})}
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=timeout,
                          stdin=subprocess.DEVNULL)  # fmt: skip


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    """The plug-in package in a fresh folder outside the repository, and a finished run of it."""
    root = tmp_path_factory.mktemp("plugin")
    shutil.copytree(EXAMPLE, root / "plugins" / "hf_icl_toy_plugin", ignore=shutil.ignore_patterns("__pycache__"))
    folder = root / "plugins" / "hf_icl_toy_plugin"
    train = [sys.executable, str(ROOT / "train.py"), "--import", str(folder), "--architecture", "toy_ema",
             "--task", "toy_lagged_sum", "--max-steps", "3", "--preset", "tiny", "--report-to", "none",
             "--threads", "1", "--output-dir", str(root / "run")]  # fmt: skip
    result = run(train, root)
    assert result.returncode == 0, result.stderr[-3000:]
    return root, folder


def test_train_py_imports_the_plugin_then_trains_evaluates_and_saves(plugin):
    root, folder = plugin
    metrics = json.loads((root / "run" / "metrics.json").read_text())
    assert metrics["architecture"] == "toy_ema" and metrics["task_family"] == "toy_plugin_regression"
    assert metrics["train"]["steps"] == 3 and metrics["run_config"]["imports"] == [str(folder)]
    assert set(metrics["test"]) >= {"model", "baselines"}
    assert (root / "run" / "model" / "model.safetensors").is_file()
    shipped = {p.name for p in (root / "run" / "model").glob("*.py")}
    assert "toy_modeling.py" in shipped and "__init__.py" not in shipped  # the modeling code, not the registrations
    assert not re.search(r"^\s*(from|import) (hf_icl|hf_icl_toy_plugin)\b",
                         (root / "run" / "model" / "toy_modeling.py").read_text(), re.M)  # fmt: skip


PREDICT = textwrap.dedent(
    """
    import json, sys, torch
    from transformers import AutoModel
    if sys.argv[2] == "without":
        sys.modules["hf_icl"] = None  # neither hf_icl nor the plug-in can be imported here
        sys.modules["hf_icl_toy_plugin"] = None
        model = AutoModel.from_pretrained(sys.argv[1], trust_remote_code=True).eval()
    else:
        import hf_icl
        model = hf_icl.AutoModelForInContextRegression.from_pretrained(sys.argv[1]).eval()
    with torch.no_grad():
        out = model(inputs=torch.tensor(json.loads(sys.argv[3]))).predictions
    print(type(model).__module__.split(".")[0])
    print(json.dumps(out.tolist()))
    """
)


def test_saved_folder_loads_remotely_without_the_plugin_or_hf_icl(plugin, tmp_path):
    root, folder = plugin
    model_dir = str(root / "run" / "model")
    local = run([sys.executable, "-c", PREDICT, model_dir, "with", json.dumps(XS)], tmp_path,
                env={"HF_ICL_PLUGINS": str(folder)})  # fmt: skip
    assert local.returncode == 0, local.stderr[-3000:]
    remote = run([sys.executable, "-c", PREDICT, model_dir, "without", json.dumps(XS)], tmp_path,
                 env={"HF_HUB_OFFLINE": "1"})  # fmt: skip
    assert remote.returncode == 0, remote.stderr[-3000:]
    local_module, local_out = local.stdout.strip().splitlines()[-2:]
    remote_module, remote_out = remote.stdout.strip().splitlines()[-2:]
    assert local_module == "hf_icl_toy_plugin" and remote_module == "transformers_modules"
    torch.testing.assert_close(torch.tensor(json.loads(remote_out)), torch.tensor(json.loads(local_out)), atol=1e-6,
                               rtol=0)  # fmt: skip


def test_shared_oracle_tests_pick_up_the_plugin_from_the_registry(plugin, tmp_path):
    """recurrent step ≡ parallel form, generate, save/load, remote code and the capability checks, for `toy_ema`,
    from the shared test files with no list edited: the registry is all they read."""
    _, folder = plugin
    tests = [str(ROOT / "tests" / name) for name in ("test_models.py", "test_registry.py", "test_mixers_recurrent.py")]
    result = run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "-k", "toy_ema", *tests],
                 tmp_path, env={"HF_ICL_PLUGINS": str(folder)})  # fmt: skip
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    passed = int(re.search(r"(\d+) passed", result.stdout).group(1))
    assert passed >= 8 and "failed" not in result.stdout, result.stdout[-2000:]
    oracles = ("test_cached_decode_equals_full_forward", "test_save_load_round_trip",
               "test_remote_code_load_in_fresh_process", "test_state_size_is_the_state_decoding_keeps")  # fmt: skip
    for oracle in oracles:  # each ran and passed for the plug-in (-rA lists every passed test by name)
        assert re.search(rf"^PASSED \S+::{oracle}\[[^\]]*toy_ema", result.stdout, re.M), (oracle, result.stdout[-1000:])


def test_an_installed_distribution_registers_through_the_entry_point_group(plugin, tmp_path):
    _, folder = plugin
    site = tmp_path / "site"
    dist = site / "hf_icl_toy_plugin-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: hf-icl-toy-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[hf_icl.plugins]\ntoy = hf_icl_toy_plugin\n")
    code = "import hf_icl; print('toy_ema' in hf_icl.list_architectures(), 'toy_lagged_sum' in hf_icl.list_tasks())"
    result = run([sys.executable, "-c", code], tmp_path, env={"PYTHONPATH": os.pathsep.join(
        [str(site), str(folder.parent), os.environ.get("PYTHONPATH", "")])})  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["True", "True"]


@pytest.mark.slow  # five interpreters, 106 s on 2 cores; every command's --import parsing is the in-process test below
def test_every_command_runs_a_working_plugin_given_with_import(plugin, tmp_path):
    _, folder = plugin
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"output_root: {tmp_path / 'sweep'}\nbase: {{task: toy_lagged_sum, max_steps: 2, preset: tiny, "
                    "threads: 1, report_to: none}\ngrid: {architecture: [toy_ema]}\n")  # fmt: skip
    sweep = run([sys.executable, "-m", "hf_icl.sweep", str(spec), "--import", str(folder)], tmp_path)
    assert sweep.returncode == 0, sweep.stdout[-2000:] + sweep.stderr[-2000:]
    assert yaml_of(tmp_path / "sweep" / "architecture=toy_ema.yaml")["imports"] == [str(folder)]  # passed on
    assert json.loads((tmp_path / "sweep" / "architecture=toy_ema" / "metrics.json").read_text())["train"]["steps"] == 2
    root = plugin[0]
    evaluate = run([sys.executable, "-m", "hf_icl.evaluate", "--import", str(folder), "--checkpoint",
                    str(root / "run" / "model"), "--task", "toy_lagged_sum", "--output-dir", str(tmp_path / "eval")],
                   tmp_path)  # fmt: skip
    assert evaluate.returncode == 0, evaluate.stderr[-2000:]
    trained = json.loads((root / "run" / "metrics.json").read_text())["test"]["model"]["mse"]
    evaluated = json.loads((tmp_path / "eval" / "metrics.json").read_text())["test"]["model"]["mse"]
    assert evaluated == pytest.approx(trained)
    export = run([sys.executable, "-m", "hf_icl.export", "--import", str(folder), "--help"], tmp_path)
    assert export.returncode == 0, export.stderr[-2000:]
    analysis = run([sys.executable, "-m", "hf_icl.analysis", "--import", str(folder), "--help"], tmp_path)
    assert analysis.returncode == 0, analysis.stderr[-2000:]


def test_every_command_names_a_broken_plugin_given_as_a_path(tmp_path, monkeypatch):
    """A module of the current folder is imported when named as a path (issue 53); when it raises, every command exits
    2 with one line naming `--import`, the module and its error. The commands' entry functions run in-process (a
    broken plug-in registers nothing); the scripts' own `--import` in fresh interpreters is the test above."""
    from cli_entry_points import call

    import hf_icl.analysis.__main__ as analysis
    import hf_icl.evaluate
    import hf_icl.export
    import hf_icl.sweep
    import hf_icl.training

    (tmp_path / "broken_plugin.py").write_text("raise RuntimeError('this plug-in is broken')\n")
    (tmp_path / "spec.yaml").write_text("output_root: sweep\nbase: {max_steps: 2}\ngrid: {seed: [0]}\n")
    monkeypatch.chdir(tmp_path)
    commands = {"train.py": (hf_icl.training.main, []), "sweep": (hf_icl.sweep.main, ["spec.yaml"]),
                "analysis": (analysis.main, ["lnw"]), "evaluate": (hf_icl.evaluate.main, []),
                "export": (hf_icl.export.main, ["regbench"])}  # fmt: skip
    for command, (entry, argv) in commands.items():
        broken = call(entry, [*argv, "--import", "./broken_plugin.py"])
        assert broken.escaped is None and broken.status == 2, (command, broken.escaped, broken.err[-2000:])
        last = broken.err.strip().splitlines()[-1]
        assert "--import" in last and "broken_plugin" in last and "this plug-in is broken" in last, (command, last)
        assert "Traceback" not in broken.err
    assert not (tmp_path / "sweep").exists()  # refused before any work
    # A bare name is a module on the import path, and the script's folder is not the current one: train.py in a fresh
    # interpreter does not find ./broken_plugin.py and says how to name it
    bare = run([sys.executable, str(ROOT / "train.py"), "--import", "broken_plugin"], tmp_path)
    last = bare.stderr.strip().splitlines()[-1]
    assert bare.returncode == 2 and "no module 'broken_plugin' on the import path" in last, bare.stderr[-2000:]
    assert "--import ./broken_plugin.py" in last and "this plug-in is broken" not in bare.stderr


def yaml_of(path):
    import yaml

    return yaml.safe_load(path.read_text())
