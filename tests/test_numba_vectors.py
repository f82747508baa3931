"""`hf_icl.numba_vectors`: when `import hf_icl` asks numba for 512-bit vectors, and when it leaves numba alone."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from hf_icl import numba_vectors

NUMBA_VARIABLES = ("NUMBA_CPU_FEATURES", "NUMBA_CPU_NAME")


@pytest.fixture
def fresh_process(monkeypatch):
    """As if numba were not imported and the user had set no NUMBA_CPU_* variable; the host reports AVX-512."""
    for name in NUMBA_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delitem(sys.modules, "numba", raising=False)
    monkeypatch.setattr(numba_vectors, "wide_vector_features", lambda: "+avx512f,+fma,-prefer-256-bit")
    return monkeypatch


def test_sets_the_features_before_numba_is_imported(fresh_process):
    assert numba_vectors.use_wide_vectors() is True
    assert os.environ["NUMBA_CPU_FEATURES"] == "+avx512f,+fma,-prefer-256-bit"


@pytest.mark.parametrize("name, value", [("NUMBA_CPU_FEATURES", ""), ("NUMBA_CPU_FEATURES", "+avx2"),
                                         ("NUMBA_CPU_NAME", "generic")])  # fmt: skip
def test_the_users_numba_settings_win(fresh_process, name, value):
    fresh_process.setenv(name, value)
    assert numba_vectors.use_wide_vectors() is False
    assert os.environ.get(name) == value
    assert os.environ.get("NUMBA_CPU_FEATURES", "") in ("", "+avx2")


def test_leaves_an_imported_numba_alone(fresh_process):
    fresh_process.setitem(sys.modules, "numba", object())
    assert numba_vectors.use_wide_vectors() is False
    assert "NUMBA_CPU_FEATURES" not in os.environ


def test_hosts_without_avx512_keep_numbas_defaults(fresh_process):
    fresh_process.setattr(numba_vectors, "wide_vector_features", lambda: None)
    assert numba_vectors.use_wide_vectors() is False
    assert "NUMBA_CPU_FEATURES" not in os.environ


def test_host_features_are_llvms_with_the_preference_removed():
    binding = pytest.importorskip("llvmlite.binding")
    features = binding.get_host_cpu_features()
    expected = f"{features.flatten()},-prefer-256-bit" if features.get("avx512f", False) else None
    assert numba_vectors.wide_vector_features() == expected


def test_import_hf_icl_configures_numba_in_a_new_process():
    """End to end: numba's own configuration after `import hf_icl` in a clean environment, on this host."""
    pytest.importorskip("numba")
    env = {key: value for key, value in os.environ.items() if key not in NUMBA_VARIABLES}
    script = (
        "import hf_icl, numba.core.config as config\n"
        "from hf_icl.numba_vectors import wide_vector_features\n"
        "print(config.CPU_FEATURES == wide_vector_features())"
    )
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "True"
