"""The compiled scan's vectorisable elementwise functions (`mixers/ops/numba_math.py`) ≡ torch's, in float32
within the argument-rounding bound of 2^w and in float64 to rounding, with inf, NaN and the softplus threshold exact."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

numba = pytest.importorskip("numba")

from hf_icl.mixers.ops.numba_math import (  # noqa: E402
    scan_exp,
    scan_sigmoid,
    scan_softplus,
    scan_softplus_slope,
)

OPTIONS = dict(fastmath={"contract"}, error_model="numpy")


@numba.njit(**OPTIONS)
def _apply_exp(values, out):
    for i in range(values.shape[0]):
        out[i] = scan_exp(values[i])


@numba.njit(**OPTIONS)
def _apply_sigmoid(values, out):
    for i in range(values.shape[0]):
        out[i] = scan_sigmoid(values[i])


@numba.njit(**OPTIONS)
def _apply_softplus(values, out):
    for i in range(values.shape[0]):
        out[i] = scan_softplus(values[i])


@numba.njit(**OPTIONS)
def _apply_softplus_slope(values, out):
    for i in range(values.shape[0]):
        out[i] = scan_softplus_slope(values[i])


def softplus_slope(x):
    """torch's softplus derivative: sigmoid, 1 above the threshold of 20."""
    return torch.where(x > 20, torch.ones_like(x), torch.sigmoid(x))


FUNCTIONS = {
    "exp": (_apply_exp, torch.exp),
    "sigmoid": (_apply_sigmoid, torch.sigmoid),
    "softplus": (_apply_softplus, torch.nn.functional.softplus),  # threshold 20, as the kernel
    "softplus slope": (_apply_softplus_slope, softplus_slope),
}
SPECIALS = [-math.inf, math.inf, math.nan, 0.0, -0.0, 20.0, 20.000002, 19.999998, -20.0, -87.0, 88.0, -200.0, 200.0]
SPECIALS += [88.5, 88.72, 89.0]  # e^x just below float32's largest value (2^w with w rounding to 128) and just above


def run(name: str, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ours, torch's in float64) for `values`."""
    kernel, reference = FUNCTIONS[name]
    out = np.empty_like(values)
    kernel(values, out)
    return out, reference(torch.from_numpy(values.astype(np.float64))).numpy()


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@settings(max_examples=30, deadline=None)
@given(values=st.lists(st.floats(-120, 120, width=32), min_size=1, max_size=70))
def test_elementwise_functions_equal_torch(name, dtype, values):
    values = np.array(values + SPECIALS, dtype=dtype)
    ours, expected = run(name, values)
    with np.errstate(over="ignore"):
        expected_in_dtype = expected.astype(dtype)
    overflow = np.isinf(expected_in_dtype)  # inf in float64, or beyond the largest float32
    finite = ~overflow & ~np.isnan(expected)
    assert np.array_equal(np.isnan(ours), np.isnan(expected)), "NaN exactly where torch has it"
    assert np.array_equal(ours[overflow], expected_in_dtype[overflow]), "±inf where the result overflows"
    if dtype == np.float32:
        # 2^w with w = x·log2(e) rounded to float32: relative error ≈ |x|·6e-8; results below 2^−126 may flush to 0
        spread = 1 + np.minimum(np.abs(values[finite].astype(np.float64)), 200)  # ±inf arguments: exact 0 or 1
        bound = 2.5e-7 * spread * np.abs(expected[finite]) + 1.2e-38
    else:
        bound = 1e-14 * np.abs(expected[finite]) + 1e-300
    error = np.abs(ours[finite].astype(np.float64) - expected[finite])
    assert (error <= bound).all(), (values[finite][error > bound], ours[finite][error > bound])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softplus_passes_values_above_its_threshold_and_zeroes_minus_infinity(dtype):
    values = np.array([20.000002, 25.0, 1e30, -math.inf], dtype=dtype)
    ours, _ = run("softplus", values)
    assert ours.tolist() == [values[0], 25.0, values[2], 0.0]
    sigmoid, _ = run("sigmoid", np.array([-math.inf, math.inf], dtype=dtype))
    assert sigmoid.tolist() == [0.0, 1.0]
    slope, _ = run("softplus slope", np.array([-math.inf, 20.000002, math.inf, math.nan], dtype=dtype))
    assert slope[:3].tolist() == [0.0, 1.0, 1.0] and math.isnan(slope[3])  # NaN stays NaN, as torch's backward
