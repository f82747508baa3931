"""Vectorisable elementwise functions for the numba CPU kernels (the selective scan, WKV, GELU); needs numba.

numba calls libm's scalar `expf` for `math.exp` unless Intel's SVML is installed, so a loop over channels with an
exp in it does not vectorise, and the B·T·D·N decays exp(Δ A) = 2^(Δ A log2 e) would dominate the scan.
`scan_exp2` is therefore, for float32, Cephes' `exp2f` in plain arithmetic that LLVM turns into SIMD code:
w = k + f with k = round(w) and |f| ≤ ½ (exact), a degree-6 minimax polynomial for 2^f (relative error ≈ 2e-7) and
2^k built in the exponent bits (for k = 128, 2^127 doubled, so that 2^w for 127.5 ≤ w < 128 stays finite). The
exponent is int32 arithmetic: AVX2 has no vector conversion of floats to int64 (AVX-512 has), and an int64 exponent
left the whole loop scalar on AVX2-only hosts (such as the AMD EPYC). w is clamped to [−127, 128]: below −127
(2^w < 6e-39, subnormal) the result is 0, at 128 and above it is inf, and NaN stays NaN. As in the torch path, the
rounding of w = Δ·(A log2 e) costs a relative error ≈ |w|·6e-8 in the decay, which only matters where the decay is
already negligible. For float64 it is libm's `exp2` (the float64 path serves tests and checks, not speed).

On it rest the scan's other elementwise functions, written so LLVM vectorises them too (numba would otherwise call
libm once per element: for Mamba's fused softplus that cost four times the scan's own arithmetic):
- `scan_exp(x)` = 2^(x log2 e);
- `scan_sigmoid(x)` = 1 / (1 + e^−x), 0 at −inf and 1 at inf;
- `scan_softplus(r)` = max(r, 0) + log1p(e^−|r|), r itself above torch's threshold of 20, 0 at −inf, and
  `scan_softplus_slope(r)`, its derivative: sigmoid(r), 1 above the threshold. log1p(t) on
  [0, 1] is Cephes logf's polynomial on 1 + t = 2^e (1 + x), |x| ≤ √2 − 1 (x = t itself for e = 0, so a tiny t keeps
  its full relative precision), with ln 2 split in two for e = 1.
float64 keeps libm for each.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic, overload

LOWEST, HIGHEST = np.float32(-127.0), np.float32(128.0)  # 2^w is 0 and inf at the ends
HIGHEST_FINITE_EXPONENT = np.float32(127.0)
ONE, TWO = np.float32(1.0), np.float32(2.0)
POLY = tuple(  # Cephes exp2f: 2^f ≈ 1 + f·P(f) on |f| ≤ ½
    np.float32(c)
    for c in (1.535336188319500e-4, 1.339887440266574e-3, 9.618437357674640e-3, 5.550332471162809e-2)
    + (2.402264791363012e-1, 6.931472028550421e-1)
)
EXPONENT_BIAS, MANTISSA_BITS = np.int32(127), np.int32(23)


@intrinsic
def _bits_to_float32(typingctx, bits):
    """Reinterpret the low 32 bits of an integer as a float32 (a register move, unlike a call to `ldexpf`)."""
    if not isinstance(bits, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(builder.trunc(args[0], ir.IntType(32)), ir.FloatType())

    return types.float32(bits), codegen


def scan_exp2(w):
    """2^w in the precision of `w` (float32: vectorisable polynomial; float64: libm); numba-compiled code only."""
    raise NotImplementedError("scan_exp2 is for numba-compiled code")


def _exp2_float32(w):
    w = LOWEST if w < LOWEST else w  # comparisons that keep NaN
    w = HIGHEST if w > HIGHEST else w
    k = np.rint(w)
    f = w - k  # exact
    p = POLY[0]
    for c in POLY[1:]:
        p = p * f + c
    top = k > HIGHEST_FINITE_EXPONENT  # k = 128: 2^w can still be finite (w < 128), so build 2^127 and double it
    k = k - ONE if top else k
    scale = _bits_to_float32((np.int32(k) + EXPONENT_BIAS) << MANTISSA_BITS)  # 2^k: 0 at k = −127; 254 << 23 < 2^31
    result = (p * f + ONE) * scale
    return result * TWO if top else result  # inf only where 2^w is past the largest float32


@overload(scan_exp2, jit_options={"cache": True, "fastmath": {"contract"}})
def _scan_exp2(w):
    if w == types.float32:
        return _exp2_float32
    if w == types.float64:
        return lambda w: np.exp2(w)
    return None


LOG2_E = np.float32(1 / math.log(2))
ZERO, HALF = np.float32(0.0), np.float32(0.5)
SOFTPLUS_THRESHOLD = np.float32(20.0)  # torch's: softplus(r) = r above it
SQRT2_MINUS_1 = np.float32(math.sqrt(2) - 1)
LN2_HIGH, LN2_LOW = np.float32(0.693359375), np.float32(-2.12194440e-4)  # Cephes' split of ln 2
LOG_POLY = tuple(  # Cephes logf: log(1 + x) ≈ x − x²/2 + x³·P(x) on √½ − 1 ≤ x ≤ √2 − 1
    np.float32(c)
    for c in (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1)
    + (-1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1)
)


def scan_exp(x):
    """e^x in the precision of `x` (float32 through `scan_exp2`, float64 libm); numba-compiled code only."""
    raise NotImplementedError("scan_exp is for numba-compiled code")


def scan_sigmoid(x):
    """1 / (1 + e^−x) in the precision of `x`; numba-compiled code only."""
    raise NotImplementedError("scan_sigmoid is for numba-compiled code")


def scan_softplus(r):
    """torch's softplus (threshold 20) in the precision of `r`; numba-compiled code only."""
    raise NotImplementedError("scan_softplus is for numba-compiled code")


def scan_softplus_slope(r):
    """∂softplus(r)/∂r with torch's threshold (sigmoid(r), 1 above 20); numba-compiled code only."""
    raise NotImplementedError("scan_softplus_slope is for numba-compiled code")


@njit(cache=True, fastmath={"contract"}, error_model="numpy", inline="always")
def _log1p_unit_float32(t):
    """log(1 + t) for 0 ≤ t ≤ 1: 1 + t = 2^e (1 + x) with e = 0, x = t, or e = 1, x = t/2 − 1/2."""
    above = t > SQRT2_MINUS_1
    x = HALF * t - HALF if above else t
    e = ONE if above else ZERO
    z = x * x
    p = LOG_POLY[0]
    for c in LOG_POLY[1:]:
        p = p * x + c
    return x + (p * x * z + e * LN2_LOW - HALF * z) + e * LN2_HIGH


_JIT = {"cache": True, "fastmath": {"contract"}, "error_model": "numpy"}


@overload(scan_exp, jit_options=_JIT)
def _scan_exp(x):
    if x == types.float32:
        return lambda x: scan_exp2(x * LOG2_E)
    if x == types.float64:
        return lambda x: math.exp(x)
    return None


@overload(scan_sigmoid, jit_options=_JIT, inline="always")
def _scan_sigmoid(x):
    if x in (types.float32, types.float64):
        one = ONE if x == types.float32 else 1.0
        return lambda x: one / (one + scan_exp(-x))
    return None


def _softplus_float32(r):
    body = (r if r > ZERO else ZERO) + _log1p_unit_float32(scan_exp2(-abs(r) * LOG2_E))
    return r if r > SOFTPLUS_THRESHOLD else body


@overload(scan_softplus, jit_options=_JIT, inline="always")
def _scan_softplus(r):
    if r == types.float32:
        return _softplus_float32
    if r == types.float64:
        return lambda r: r if r > SOFTPLUS_THRESHOLD else math.log1p(math.exp(r))
    return None


@overload(scan_softplus_slope, jit_options=_JIT, inline="always")
def _scan_softplus_slope(r):
    if r in (types.float32, types.float64):
        one = ONE if r == types.float32 else 1.0
        return lambda r: one if r > SOFTPLUS_THRESHOLD else scan_sigmoid(r)  # NaN stays NaN, as in torch
    return None
