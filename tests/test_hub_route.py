"""The standard Hub route (DESIGN §2.1, Hub-portable) for every architecture.

`register_for_auto_class` + `save_pretrained`, a plain `save_pretrained`, `push_to_hub` and
`save_pretrained(push_to_hub=True)` (both against a fake Hub that copies into a local folder) must give folders that
load with `trust_remote_code=True` in a fresh process where hf_icl is not importable, with identical outputs. All
folders are loaded by one subprocess. A save that fails leaves no half-written folder.
"""

import contextlib
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import textwrap
import types

import huggingface_hub
import pytest
import torch
import transformers
from huggingface_hub.errors import EntryNotFoundError
from transformers import AutoConfig, AutoModelForCausalLM

import hf_icl
from hf_icl.modeling.remote_code import collect_modeling_sources, exported_classes

ARCHS = hf_icl.list_architectures()
INPUT_IDS = [[0, 0, 3, 5, 7, 19, 2], [1, 2, 3, 4, 19, 5, 6]]
ATTENTION_MASK = [[0, 0, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1]]
REGRESSION_XS = torch.linspace(-1, 1, 2 * 5 * 3).reshape(2, 5, 3).tolist()  # (B, N, d)
REGRESSION_YS = torch.linspace(1, -1, 2 * 5).reshape(2, 5).tolist()  # (B, N)

# The route is what this file tests, so the expected outputs and the remote ones both take the plain PyTorch paths:
# a fresh process JIT-compiles every numba kernel in each checkpoint's own copy of the remote code (about 50 s of the
# module's 100 s on an AMD EPYC). test_models.py's remote load runs the kernels in remote code.
PLAIN_PYTORCH_PATHS = {"HF_ICL_SCAN_BACKEND": "torch"}

REMOTE_LOAD = textwrap.dedent(
    """
    import json, sys
    sys.modules["hf_icl"] = None  # hf_icl must not be importable here
    import torch, transformers
    results = {}
    for job in json.load(open(sys.argv[1])):
        auto_class = getattr(transformers, job["auto_class"])
        if job["auto_class"] == "AutoConfig":
            config = auto_class.from_pretrained(job["folder"], trust_remote_code=True)
            results[job["name"]] = {"class": type(config).__name__, "module": type(config).__module__}
            continue
        model = auto_class.from_pretrained(job["folder"], trust_remote_code=True).eval()
        with torch.no_grad():
            if "attention_mask" in job:
                output = model(torch.tensor(job["inputs"]), attention_mask=torch.tensor(job["attention_mask"])).logits
            else:  # the in-context path the model card shows: model(xs=, ys=)
                output = model(xs=torch.tensor(job["xs"]), ys=torch.tensor(job["ys"])).predictions
        results[job["name"]] = {"class": type(model).__name__, "module": type(model).__module__,
                                "output": output.tolist()}
        if job.get("resave"):  # what was loaded as remote code saves again, and that folder loads the same
            model.save_pretrained(job["resave"])
            again = auto_class.from_pretrained(job["resave"], trust_remote_code=True).eval()
            with torch.no_grad():
                same = again(torch.tensor(job["inputs"]), attention_mask=torch.tensor(job["attention_mask"])).logits
            results[job["name"]]["resaved_equal"] = torch.equal(same, output)
    print(json.dumps(results))
    """
)


@contextlib.contextmanager
def registered_for_auto_classes(*pairs):
    """`cls.register_for_auto_class(auto)` for each pair, as a user would; undone afterwards (it is global state)."""
    missing = object()
    previous = [(cls, vars(cls).get("_auto_class", missing)) for cls, _ in pairs]
    try:
        for cls, auto_class in pairs:
            cls.register_for_auto_class(auto_class)
        yield
    finally:
        for cls, value in previous:
            if value is missing:
                with contextlib.suppress(AttributeError):
                    delattr(cls, "_auto_class")
            else:
                cls._auto_class = value


@contextlib.contextmanager
def fake_hub(root):
    """The Hub calls `push_to_hub` makes, answered by copying the uploaded files into `root/<repo_id>`."""

    def create_repo(self, repo_id, **kwargs):
        (root / repo_id).mkdir(parents=True, exist_ok=True)
        return types.SimpleNamespace(repo_id=repo_id)

    def create_commit(self, repo_id, operations, **kwargs):
        for operation in operations:
            target = root / repo_id / operation.path_in_repo
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(operation.path_or_fileobj, target)
        return types.SimpleNamespace(commit_url=f"local://{repo_id}", oid="0" * 40)

    def no_card(cls, *args, **kwargs):
        raise EntryNotFoundError("the fake Hub has no model card")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(huggingface_hub.HfApi, "create_repo", create_repo)
        patch.setattr(huggingface_hub.HfApi, "create_commit", create_commit)
        patch.setattr(huggingface_hub.ModelCard, "load", classmethod(no_card))
        yield


def tiny_model(arch, seed=0, **overrides):
    torch.manual_seed(seed)
    config = hf_icl.config_for(arch, "tiny", vocab_size=20, **overrides)
    model = AutoModelForCausalLM.from_config(config).eval()
    with torch.no_grad():  # off the initial values, so a load that re-initialises cannot pass
        for parameter in model.parameters():
            parameter.add_(0.05 * torch.randn_like(parameter))
    return model


def logits(model):
    with torch.no_grad():
        return model(torch.tensor(INPUT_IDS), attention_mask=torch.tensor(ATTENTION_MASK)).logits


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Save every case, load them all in one fresh process; `(expected outputs, folders, remote results)`."""
    with pytest.MonkeyPatch.context() as patch:  # both sides on the plain PyTorch paths (see PLAIN_PYTORCH_PATHS)
        for name, value in PLAIN_PYTORCH_PATHS.items():
            patch.setenv(name, value)
        return export_and_load_remotely(tmp_path_factory)


def export_and_load_remotely(tmp_path_factory):
    root = tmp_path_factory.mktemp("hub_route")
    expected, folders, jobs = {}, {}, []

    def add(name, folder, auto_class, model=None):
        folders[name] = folder
        job = {"name": name, "folder": str(folder), "auto_class": auto_class}
        if isinstance(model, torch.nn.Module) and auto_class == "AutoModelForCausalLM":
            job |= {"inputs": INPUT_IDS, "attention_mask": ATTENTION_MASK}
            expected[name] = (type(model).__name__, logits(model))
        elif model is not None:
            job |= {"xs": REGRESSION_XS, "ys": REGRESSION_YS}
            with torch.no_grad():
                output = model(xs=torch.tensor(REGRESSION_XS), ys=torch.tensor(REGRESSION_YS)).predictions
            expected[name] = (type(model).__name__, output)
        jobs.append(job)

    for arch in ARCHS:  # the route of the transformers docs, for every architecture
        model = tiny_model(arch)
        with registered_for_auto_classes((type(model.config), "AutoConfig"), (type(model), "AutoModelForCausalLM")):
            model.save_pretrained(root / arch)
        add(arch, root / arch, "AutoModelForCausalLM", model)

    model = tiny_model("gla", seed=1)  # no registration: hf_icl's classes are registered by default
    model.save_pretrained(root / "plain")
    add("plain", root / "plain", "AutoModelForCausalLM", model)
    jobs[-1]["resave"] = str(root / "resaved")

    config = hf_icl.config_for("retnet", "tiny", vocab_size=20)  # a config on its own, once registered
    with registered_for_auto_classes((type(config), "AutoConfig")):
        config.save_pretrained(root / "config_only")
    add("config_only", root / "config_only", "AutoConfig")

    with fake_hub(root / "hub"):
        model = tiny_model("mamba", seed=2)
        with registered_for_auto_classes((type(model.config), "AutoConfig"), (type(model), "AutoModelForCausalLM")):
            model.push_to_hub("user/tiny-mamba")
        add("push_to_hub", root / "hub" / "user" / "tiny-mamba", "AutoModelForCausalLM", model)
        model = tiny_model("llama", seed=3)
        model.save_pretrained(root / "tiny-llama", push_to_hub=True, repo_id="user/tiny-llama")
        add("save_and_push", root / "hub" / "user" / "tiny-llama", "AutoModelForCausalLM", model)

    torch.manual_seed(4)
    config = hf_icl.config_for("llama", "tiny", input_dim=3, output_dim=1)
    model = hf_icl.AutoModelForInContextRegression.from_config(config).eval()
    model.save_pretrained(root / "regression")
    auto_map = json.loads((root / "regression" / "config.json").read_text())["auto_map"]
    auto_class = next(key for key, ref in auto_map.items() if ref.endswith("." + type(model).__name__))
    add("regression", root / "regression", auto_class, model)

    (root / "jobs.json").write_text(json.dumps(jobs))
    env = {"HF_MODULES_CACHE": str(root / "modules"), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
           **PLAIN_PYTORCH_PATHS}
    result = subprocess.run(
        [sys.executable, "-c", REMOTE_LOAD, str(root / "jobs.json")],
        capture_output=True,
        text=True,
        env={**env, "PATH": "/usr/bin:/bin"},
        cwd=root,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return expected, folders, json.loads(result.stdout.strip().splitlines()[-1])


def assert_loaded_remotely(exported, name):
    expected, _, remote = exported
    class_name, output = expected[name]
    assert remote[name]["class"] == class_name
    assert not remote[name]["module"].startswith("hf_icl"), remote[name]["module"]
    torch.testing.assert_close(torch.tensor(remote[name]["output"]), output, atol=1e-6, rtol=0)


@pytest.mark.parametrize("arch", ARCHS)
def test_register_for_auto_class_then_save_pretrained(exported, arch):
    folder = exported[1][arch]
    config = json.loads((folder / "config.json").read_text())
    assert set(config["auto_map"]) == {"AutoConfig", "AutoModel", "AutoModelForCausalLM"}
    assert (folder / "model.safetensors").is_file()
    assert_loaded_remotely(exported, arch)


@pytest.mark.parametrize(
    "arch, shipped, left_out",
    [
        ("transformer", set(), ("ngram*", "selective_scan*", "slow*")),  # no unit it does not use (issue 52)
        (
            "slowfast_transformer",
            {"slowfast.py", "slowfast_block.py", "slow_features.py"},
            ("ngram*", "selective_scan*"),
        ),
        ("mamba", {"selective_scan.py"}, ("ngram*", "slow*")),
    ],
)
def test_a_checkpoint_ships_only_the_units_its_config_uses(exported, arch, shipped, left_out):
    """Remote code holds the skeleton, the architecture and the mixers and block features its config turns on; the
    plain Transformer's loads where hf_icl is not installed (`assert_loaded_remotely`)."""
    files = {path.name for path in exported[1][arch].glob("*.py")}
    assert shipped <= files
    assert [name for name in files if any(fnmatch.fnmatch(name, pattern) for pattern in left_out)] == []
    assert_loaded_remotely(exported, arch)


def test_plain_save_pretrained_is_remote_loadable(exported):
    assert_loaded_remotely(exported, "plain")
    assert exported[2]["plain"]["resaved_equal"]  # and the remote code saves again, without hf_icl


def test_registered_config_saves_on_its_own(exported):
    folder = exported[1]["config_only"]
    assert json.loads((folder / "config.json").read_text())["auto_map"] == {
        "AutoConfig": "configuration_retnet.ICLRetNetConfig"
    }
    assert exported[2]["config_only"]["class"] == "ICLRetNetConfig"
    assert not exported[2]["config_only"]["module"].startswith("hf_icl")


@pytest.mark.parametrize("name", ["push_to_hub", "save_and_push"])
def test_push_to_hub_uploads_a_remote_loadable_folder(exported, name):
    folder = exported[1][name]
    assert {"config.json", "model.safetensors", "README.md", "decoder.py"} <= {p.name for p in folder.iterdir()}
    assert_loaded_remotely(exported, name)


def test_regression_model_exports_the_same_way(exported):
    assert_loaded_remotely(exported, "regression")


def test_registration_picks_the_auto_classes():
    model = tiny_model("s4")
    assert exported_classes(model) == {
        "AutoConfig": type(model.config),
        "AutoModelForCausalLM": type(model),
        "AutoModel": type(model.model),
    }
    assert exported_classes(model.config) == {}  # a config alone ships code only once registered, as in transformers
    with registered_for_auto_classes((type(model), "AutoModel")):
        assert exported_classes(model) == {"AutoConfig": type(model.config), "AutoModel": type(model)}


def test_flat_export_rewrites_imports_and_rejects_what_cannot_ship(tmp_path, monkeypatch):
    files = {
        "__init__.py": "",
        "one/__init__.py": "",
        "one/util.py": "A = 1\n",
        "two/__init__.py": "",
        "two/util.py": "B = 2\n",
        "good.py": "from .one.util import A\n",
        "clash.py": "from .one.util import A\nfrom .two.util import B\n",
        "by_name.py": "import flatpkg.one.util\n",
    }
    for name, text in files.items():
        (tmp_path / "flatpkg" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "flatpkg" / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        for name in ("good", "clash", "by_name"):
            __import__(f"flatpkg.{name}")
        expected = {"good.py": "from .util import A\n", "util.py": "A = 1\n"}
        assert collect_modeling_sources(["flatpkg.good"]) == expected
        with pytest.raises(ValueError, match=r"flatpkg\.(one|two)\.util and .* would both be exported as util\.py"):
            collect_modeling_sources(["flatpkg.clash"])
        with pytest.raises(ValueError, match="flatpkg.by_name imports flatpkg by name"):
            collect_modeling_sources(["flatpkg.by_name"])
    finally:
        for name in [name for name in sys.modules if name.split(".")[0] == "flatpkg"]:
            del sys.modules[name]


def _fail(*args, **kwargs):
    raise RuntimeError("disk full")


def test_failed_save_leaves_no_half_written_folder(tmp_path, monkeypatch):
    model = tiny_model("transformer")
    monkeypatch.setattr(transformers.modeling_utils, "safe_save_file", _fail)
    with registered_for_auto_classes((type(model.config), "AutoConfig"), (type(model), "AutoModelForCausalLM")):
        with pytest.raises(RuntimeError, match="disk full"):
            model.save_pretrained(tmp_path / "new")
    assert os.listdir(tmp_path) == []  # neither the folder nor a staging folder is left


def test_failed_save_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    folder = tmp_path / "ckpt"
    old = tiny_model("transformer", seed=1)
    old.save_pretrained(folder)
    (folder / "tokenizer.json").write_text("{}")  # saved next to the model by train.py; a save must keep it
    before = {path.name: path.read_bytes() for path in folder.iterdir()}
    monkeypatch.setattr(transformers.modeling_utils, "safe_save_file", _fail)
    with pytest.raises(RuntimeError, match="disk full"):
        tiny_model("gla", seed=2).save_pretrained(folder)
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == before
    assert sorted(os.listdir(tmp_path)) == ["ckpt"]
    monkeypatch.undo()
    torch.testing.assert_close(logits(AutoModelForCausalLM.from_pretrained(folder)), logits(old), atol=0, rtol=0)
    new = tiny_model("gla", seed=2)
    new.save_pretrained(folder)  # a successful save over it replaces the checkpoint and keeps the tokenizer
    assert (folder / "tokenizer.json").read_text() == "{}"
    assert type(AutoConfig.from_pretrained(folder)).__name__ == "ICLGLAConfig"
    torch.testing.assert_close(logits(AutoModelForCausalLM.from_pretrained(folder)), logits(new), atol=0, rtol=0)
