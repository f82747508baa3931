import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import tempfile  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

# One datasets cache per test session, shared with the training subprocesses, so each task is generated once.
os.environ.setdefault("HF_DATASETS_CACHE", tempfile.mkdtemp(prefix="hf_icl_datasets_"))

torch.set_num_threads(1)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Tests that share a module-scoped fixture go to one xdist worker (`--dist loadgroup`, set in pyproject.toml).

    Under plain `--dist load` the workers take a module's tests in turns, so each worker built the module's fixture
    (a remote-code load of every architecture, a trained run) again; grouped, it is built once.
    """
    for item in items:
        fixture_defs = getattr(item, "_fixtureinfo", None)
        if fixture_defs and any(defs[-1].scope == "module" for defs in fixture_defs.name2fixturedefs.values()):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
