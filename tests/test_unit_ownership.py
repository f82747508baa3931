"""No code branches on a unit's name outside the file or folder that owns it (issue 52: every unit declares and
registers itself, and the rest of the code asks its declarations). Units: mixers, architectures, block features and
their config fields (what a sweep key or a feature flag names), a task family's declared metrics
(`TaskFamily.metrics`) and run options (`TaskOption`, with their old flags), and analysis commands. Task and family
names are checked by `test_task_registry.py`, with the same finder."""

import ast
import inspect
from pathlib import Path

from test_task_registry import compared_names, owning_folder

import hf_icl
from hf_icl.analysis.__main__ import ANALYSES, discover
from hf_icl.block_features.feature_registry import BLOCK_FEATURES
from hf_icl.mixers import list_mixers, mixer_spec
from hf_icl.tasks import FAMILIES
from hf_icl.training.arguments import build_parser

PACKAGE = Path(hf_icl.__file__).parent


def _file_or_folder(path: Path, registry_folder: Path) -> Path:
    """A unit's own file, or its folder when it lives in one below the registry's folder."""
    return path if path.parent == registry_folder else path.parent


def owners() -> dict[str, set[Path]]:
    """Name -> the files or folders allowed to compare a value with it."""
    found: dict[str, set[Path]] = {}
    for name in list_mixers():
        found.setdefault(name, set()).add(Path(inspect.getfile(mixer_spec(name).mixer_class)))
    for name, entry in hf_icl.ARCHITECTURES.items():
        found.setdefault(name, set()).add(Path(inspect.getfile(entry.config_class)).parent)
    for name, feature in BLOCK_FEATURES.items():  # the feature and its fields (sweep keys, flags' fields)
        owner = _file_or_folder(Path(inspect.getfile(feature)), PACKAGE / "block_features")
        for unit in (name, *feature.config_fields):
            found.setdefault(unit, set()).add(owner)
    for family in FAMILIES.values():  # a family's metrics and run options, with their old flags
        for unit in (*family.metrics, *(o.name for o in family.training_options),
                     *(o.legacy_flag for o in family.training_options if o.legacy_flag)):  # fmt: skip
            found.setdefault(unit, set()).add(owning_folder(family))
    discover()
    for command, module in ANALYSES.items():
        found.setdefault(command, set()).add(Path(module.__file__))
    return found


def test_no_code_branches_on_a_unit_name_outside_its_owner():
    allowed = owners()
    assert {"attention", "mamba", "gla", "transformer", "regular_gpt"} <= set(allowed)
    assert {"ngram_heads", "regbench_metrics", "train_on_delimiter", "--train-on-delimiter", "slowfast"} <= set(allowed)
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for line, value in compared_names(ast.parse(path.read_text(encoding="utf-8"))):
            if value in allowed and not any(path == owner or owner in path.parents for owner in allowed[value]):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {value!r}")
    assert not found, "branches on a unit name outside its owner:\n" + "\n".join(found)


def test_the_finder_flags_a_mixer_name_comparison(tmp_path):
    tree = ast.parse('if layer_type == "mamba" or arch in ("gla", x): pass')
    assert sorted(value for _, value in compared_names(tree)) == ["gla", "mamba"]


def test_a_family_metric_is_served_by_the_name_the_family_declares():
    import hf_icl.evaluation
    from hf_icl.tasks.regbench.metrics import regbench_metrics

    assert FAMILIES["regbench"].metrics == {"regbench_metrics": regbench_metrics}
    assert hf_icl.evaluation.regbench_metrics is regbench_metrics
    assert not hasattr(hf_icl.evaluation, "no_family_declares_this_metric")


def test_an_old_run_argument_flag_is_the_family_option_that_declares_it():
    """The generic parser names no family's option: `--train-on-delimiter` comes from RegBench's declaration."""
    (option,) = FAMILIES["regbench"].training_options
    assert option.legacy_flag == "--train-on-delimiter"
    actions = {action.dest: action for action in build_parser()._actions}
    assert actions[option.name].option_strings[0] == option.legacy_flag
    assert "regbench" in actions[option.name].help  # says which family reads it
    modules = ("arguments", "run_schema", "run_parser", "layers", "config_files", "resume_settings", "legacy",
               "run_checks")  # fmt: skip
    source = "".join((PACKAGE / "training" / f"{module}.py").read_text(encoding="utf-8") for module in modules)
    assert "train_on_delimiter" not in source and "--train-on-delimiter" not in source
