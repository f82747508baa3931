"""`hf_icl.utils.numba_vectors`: when `import hf_icl` asks numba for 512-bit vectors, and when it leaves numba alone."""

from __future__ import annotations

import os
import subprocess
import sys
import types

import pytest

from hf_icl.utils import numba_vectors

numba_config = pytest.importorskip("numba.core.config")
numba_registry = pytest.importorskip("numba.core.registry")

NUMBA_VARIABLES = ("NUMBA_CPU_FEATURES", "NUMBA_CPU_NAME")
WIDE = "+avx512f,+fma,-prefer-256-bit"


@pytest.fixture
def fresh_process(monkeypatch):
    """As if numba had compiled nothing and the user had set no NUMBA_CPU_* variable; the host reports AVX-512."""
    for name in NUMBA_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(numba_config, "CPU_FEATURES", None)
    monkeypatch.setattr(numba_registry, "cpu_target", types.SimpleNamespace())  # no target context created yet
    monkeypatch.setattr(numba_vectors, "wide_vector_features", lambda: WIDE)
    return monkeypatch


def test_sets_numbas_features_in_this_process_only(fresh_process):
    assert numba_vectors.use_wide_vectors() is True
    assert numba_config.CPU_FEATURES == WIDE
    assert "NUMBA_CPU_FEATURES" not in os.environ  # children and remote jobs decide for their own host


@pytest.mark.parametrize("name, value", [("NUMBA_CPU_FEATURES", ""), ("NUMBA_CPU_FEATURES", "+avx2"),
                                         ("NUMBA_CPU_NAME", "generic")])  # fmt: skip
def test_the_users_numba_settings_win(fresh_process, name, value):
    fresh_process.setenv(name, value)
    assert numba_vectors.use_wide_vectors() is False
    assert numba_config.CPU_FEATURES is None


def test_leaves_numba_alone_once_it_has_compiled(fresh_process):
    fresh_process.setattr(numba_registry, "cpu_target", types.SimpleNamespace(_toplevel_target_context=object()))
    assert numba_vectors.use_wide_vectors() is False
    assert numba_config.CPU_FEATURES is None


def test_hosts_without_avx512_keep_numbas_defaults(fresh_process):
    fresh_process.setattr(numba_vectors, "wide_vector_features", lambda: None)
    assert numba_vectors.use_wide_vectors() is False
    assert numba_config.CPU_FEATURES is None


def test_host_features_are_llvms_with_the_preference_removed():
    binding = pytest.importorskip("llvmlite.binding")
    features = binding.get_host_cpu_features()
    expected = f"{features.flatten()},-prefer-256-bit" if features.get("avx512f", False) else None
    assert numba_vectors.wide_vector_features() == expected


def run_clean(script: str) -> str:
    env = {key: value for key, value in os.environ.items() if key not in NUMBA_VARIABLES}
    return subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True).stdout


def test_import_hf_icl_configures_numba_in_a_new_process():
    """End to end on this host: numba's configuration after `import hf_icl`, and the compiled code's registers."""
    script = (
        "import os, numpy as np, numba, hf_icl\n"
        "from numba.core import config\n"
        "from hf_icl.utils.numba_vectors import wide_vector_features\n"
        "@numba.njit\n"
        "def scale(values):\n"
        "    for i in range(values.shape[0]):\n"
        "        values[i] *= np.float32(2)\n"
        "scale(np.ones(64, np.float32))\n"
        "zmm = 'zmm' in next(iter(scale.inspect_asm().values()))\n"
        "print(config.CPU_FEATURES == wide_vector_features(), zmm == (wide_vector_features() is not None),\n"
        "      'NUMBA_CPU_FEATURES' in os.environ)"
    )
    assert run_clean(script).split() == ["True", "True", "False"]


def test_a_numba_that_compiled_before_hf_icl_is_left_alone():
    script = (
        "import numba\n"
        "numba.njit(lambda x: x + 1)(1)\n"
        "import hf_icl\n"
        "from numba.core import config\n"
        "print(config.CPU_FEATURES is None)"
    )
    assert run_clean(script).split() == ["True"]
