"""Old import paths (the root's former helpers and pages, `hf_icl.models`, the modules the family folders replaced)
keep working for one release, each with a `FutureWarning`, and give the very objects of the new place; the package
root holds the entry points only; the stable names (DESIGN §2.5) and the exporter's targets come from the registry."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from hf_icl.architectures import ARCHITECTURES
from hf_icl.export import export_targets
from hf_icl.tasks import FAMILIES
from hf_icl.utils.deprecation import MOVED_MODULES, MOVED_NAMES

PACKAGE = Path(__file__).resolve().parents[1] / "hf_icl"
ROOT_HELPERS = ("atomic_files", "callable_modules", "deprecation", "numba_vectors", "option_help", "run_locks",
                "strict_yaml", "validation")  # fmt: skip
EXPECTED = {
    **{f"hf_icl.{name}": f"hf_icl.utils.{name}" for name in ROOT_HELPERS},
    "hf_icl.registry_tables": "hf_icl.pages.registry_tables",
    "hf_icl.tasks_page": "hf_icl.pages.tasks_page",
    "hf_icl.models": "hf_icl.architectures",
    "hf_icl.tasks.copying": "hf_icl.tasks.generation.copying",
    "hf_icl.tasks.copying_sampling": "hf_icl.tasks.generation.copying_sampling",
    "hf_icl.tasks.phonebook": "hf_icl.tasks.generation.phonebook",
    "hf_icl.tasks.recall": "hf_icl.tasks.generation.recall",
    "hf_icl.tasks.generative": "hf_icl.tasks.generation.generative",
    "hf_icl.tasks.regbench_sampling": "hf_icl.tasks.regbench.sampling",
    "hf_icl.tasks.formal_languages": "hf_icl.tasks.formal_language.languages",
    "hf_icl.tasks.regular_languages": "hf_icl.tasks.formal_language.regular_languages",
    "hf_icl.tasks.function_class_data": "hf_icl.tasks.function_classes.function_class_data",
    "hf_icl.evaluation.regbench_eval": "hf_icl.tasks.regbench.evaluation",
    "hf_icl.evaluation.generation_eval": "hf_icl.tasks.generation.evaluation",
    "hf_icl.evaluation.in_context_regression": "hf_icl.tasks.function_classes.evaluation",
    "hf_icl.evaluation.icl_arithmetic_eval": "hf_icl.tasks.icl_arithmetic.evaluation",
    "hf_icl.evaluation.text_lm_eval": "hf_icl.tasks.text_lm.evaluation",
    "hf_icl.evaluation.text_mixture_eval": "hf_icl.tasks.text_mixture.evaluation",
    "hf_icl.training.run_lock": "hf_icl.utils.run_locks",
    "hf_icl.tasks.generation.online_rows": "hf_icl.tasks.online_rows",
}
"""Old module paths that must keep working for one release -> the module that replaced them (all in MOVED_MODULES,
so the parametrised test below cannot run on an empty list)."""


def test_every_old_path_of_this_release_is_listed_and_has_no_file():
    assert {old: MOVED_MODULES.get(old) for old in EXPECTED} == EXPECTED
    for old in MOVED_MODULES:  # an alias is a table entry, never a shim file beside the real module
        path = PACKAGE.parent.joinpath(*old.split("."))
        assert not path.with_suffix(".py").exists() and not path.is_dir(), f"{old} still has a file"
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == [
        "__init__.py", "api.py", "cli.py", "evaluate.py", "export.py", "plugins.py", "sweep.py", "train.py",
    ]  # fmt: skip
    assert list(MOVED_NAMES) == ["hf_icl.tokenization"]  # a module of moved names has no file either
    assert not PACKAGE.joinpath("tokenization.py").exists()


@pytest.mark.parametrize("old", sorted(MOVED_MODULES))
def test_an_old_module_path_is_the_new_module_with_a_warning(old, monkeypatch):
    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(FutureWarning, match=f"{old} is deprecated .* import {MOVED_MODULES[old]} instead"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(MOVED_MODULES[old])


@pytest.mark.parametrize("architecture", sorted(ARCHITECTURES))
def test_the_old_zoo_name_aliases_each_architecture_module(architecture, monkeypatch):
    """`hf_icl.models.<arch>` and its modules are those of `hf_icl.architectures.<arch>` (not second copies that the
    path finder would load from the same folder under the old name)."""
    config_class = ARCHITECTURES[architecture].config_class
    config_module = config_class.__module__  # hf_icl.architectures.<arch>.configuration_<arch>
    package = config_module.rpartition(".")[0]
    assert package.startswith("hf_icl.architectures.")
    for new in (package, config_module):
        old = "hf_icl.models" + new[len("hf_icl.architectures") :]
        monkeypatch.delitem(sys.modules, old, raising=False)
        with pytest.warns(FutureWarning, match=f"{old} is deprecated .* import {new} instead"):
            module = importlib.import_module(old)
        assert module is importlib.import_module(new)
    old_config = importlib.import_module("hf_icl.models" + config_module[len("hf_icl.architectures") :])
    assert getattr(old_config, config_class.__name__) is config_class


def test_an_old_name_of_a_module_that_never_existed_is_not_found():
    with pytest.raises(ModuleNotFoundError, match="hf_icl.models.no_such_architecture"):  # warns for hf_icl.models
        importlib.import_module("hf_icl.models.no_such_architecture")


@pytest.mark.parametrize(
    "old, name, new",
    [
        ("hf_icl.tokenization", "regbench_tokenizer", "hf_icl.tasks.regbench"),
        ("hf_icl.tokenization", "COPY_SYMBOLS", "hf_icl.tasks.generation.tokenizers"),
        ("hf_icl.tokenization", "char_tokenizer", "hf_icl.tasks.char_tokenizer"),
        ("hf_icl.tokenization", "text_tokenizer", "hf_icl.tasks.text_mixture"),
        ("hf_icl.tasks", "GENERATION_TASKS", "hf_icl.tasks.generation"),
        ("hf_icl.tasks", "RegBenchBuilder", "hf_icl.tasks.regbench"),
        ("hf_icl.evaluation.metrics", "regbench_metrics", "hf_icl.tasks.regbench.metrics"),
    ],
)
def test_an_old_name_resolves_to_the_new_object_with_a_warning(old, name, new, monkeypatch):
    if old == "hf_icl.tokenization":
        monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(FutureWarning, match="is deprecated"):
        value = getattr(importlib.import_module(old), name)
    assert value is getattr(importlib.import_module(new), name)


def test_stable_names_need_no_warning():
    code = (
        "import warnings; warnings.simplefilter('error', FutureWarning)\n"
        "import hf_icl, hf_icl.evaluate\n"
        "from hf_icl.tasks.regbench import next_token_truth\n"
        "from hf_icl.tasks.function_classes import sample\n"
        "from hf_icl.evaluation import regbench_metrics\n"
        "from hf_icl.baselines import BaumWelch, InContextNGram\n"
        "from hf_icl.baselines.regression import least_squares\n"
        "assert hf_icl.load_tokenizer('regbench').pad_token == '.' and 'regbench' in hf_icl.list_tasks()\n"
        "print(sample('linear_regression', 2, 5, 3, seed=0)['xs'].shape)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "torch.Size([2, 5, 3])"


@pytest.mark.parametrize(
    "old, says",
    [
        ("hf_icl.evaluation.generation_eval", "metrics.json of runs on the same generation task"),
        ("hf_icl.registry_tables", "python -m hf_icl.pages.registry_tables"),
    ],
)
def test_an_old_command_still_runs(old, says):
    result = subprocess.run([sys.executable, "-m", old, "--help"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and says in result.stdout, result.stderr[-2000:]
    assert f"FutureWarning: {old} is deprecated" in result.stderr


def test_every_name_the_exporter_takes_comes_from_the_registry():
    targets = export_targets()
    exports = {family.export.name: family.export for family in FAMILIES.values() if family.export is not None}
    assert set(exports) == {"regbench", "formal_languages", "copying", "function_classes", "icl_arithmetic",
                            "text_mixture", "text_lm"}  # fmt: skip
    exported = [family for family in FAMILIES.values() if family.export is not None]
    assert set(targets) == set(exports) | {f.name for f in exported} | {task for f in exported for task in f.tasks}
    for name, export in exports.items():
        assert targets[name] == (export, None) and export.configs_of(None) == list(export.configs)
    export, task = targets["parity_p"]
    assert export.name == "formal_languages"
    assert export.configs_of(task) == [f"parity_p{p}" for p in (10, 30, 50, 70, 90)]
    assert targets["formal_language"] == (export, None) and targets["generation"][0].name == "copying"
    export, task = targets["linear_regression"]
    assert export.configs_of(task) == ["linear_regression"] + [
        f"linear_regression_{v}" for v in ("scaled_x", "noisy_y", "skewed_covariance", "orthant")
    ]
    assert targets["vector_mqar"][0].configs_of("vector_mqar") == ["vector_mqar", "vector_mqar_4_queries"]
    assert targets["copy"][0].configs_of("copy") == ["copy"] and targets["regbench"][1] is None
    for task in (task for family in exported for task in family.tasks):  # each export holds the task's data
        export, narrowed = targets[task]
        assert export.configs_of(narrowed), task


@pytest.mark.parametrize("module", ["hf_icl.evaluate", "hf_icl.evaluation"])
def test_the_evaluation_command_answers_under_both_names(module, tmp_path):
    argv = [sys.executable, "-m", module, "--checkpoint", str(tmp_path), "--task", "regbench"]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert (
        "python -m hf_icl.evaluate: error: argument --checkpoint:" in result.stderr
        and "no config.json" in result.stderr
    )


def test_the_lookup_oracle_still_takes_a_task_name():
    from hf_icl.baselines.copying import LookupOracle, lookup_suffix_answer

    with pytest.warns(FutureWarning, match="LookupOracle\\(task_name\\) is deprecated"):
        old = LookupOracle("lookup_suffix", answer_length=2)
    new = LookupOracle(lookup_suffix_answer, eos=True, answer_length=2)
    prompts = ["$abcdef|cd", "$xyzxq|yz"]
    assert old.generate(prompts, 5) == new.generate(prompts, 5) == ["ef.", "xq."]
