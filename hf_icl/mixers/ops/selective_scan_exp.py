"""A vectorisable 2^w for the numba selective scan (:mod:`.selective_scan_numba`); needs numba.

numba calls libm's scalar `expf` for `math.exp` unless Intel's SVML is installed, so a loop over channels with an
exp in it does not vectorise, and the B·T·D·N decays exp(Δ A) = 2^(Δ A log2 e) would dominate the scan.
`scan_exp2` is therefore, for float32, Cephes' `exp2f` in plain arithmetic that LLVM turns into SIMD code:
w = k + f with k = round(w) and |f| ≤ ½ (exact), a degree-6 minimax polynomial for 2^f (relative error ≈ 2e-7) and
2^k built in the exponent bits. w is clamped to [−127, 128]: below −127 (2^w < 6e-39, subnormal) the result is 0,
above 128 it is inf, and NaN stays NaN. As in the torch path, the rounding of w = Δ·(A log2 e) costs a relative
error ≈ |w|·6e-8 in the decay, which only matters where the decay is already negligible. For float64 it is libm's
`exp2` (the float64 path serves tests and checks, not speed).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

LOWEST, HIGHEST = np.float32(-127.0), np.float32(128.0)  # 2^k is 0 and inf at the ends
ONE = np.float32(1.0)
POLY = tuple(  # Cephes exp2f: 2^f ≈ 1 + f·P(f) on |f| ≤ ½
    np.float32(c)
    for c in (1.535336188319500e-4, 1.339887440266574e-3, 9.618437357674640e-3, 5.550332471162809e-2)
    + (2.402264791363012e-1, 6.931472028550421e-1)
)
EXPONENT_BIAS, MANTISSA_BITS = np.int64(127), np.int64(23)


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
    scale = _bits_to_float32((np.int64(k) + EXPONENT_BIAS) << MANTISSA_BITS)  # 2^k: 0 at k = −127, inf at 128
    return (p * f + ONE) * scale


@overload(scan_exp2, jit_options={"cache": True, "fastmath": {"contract"}})
def _scan_exp2(w):
    if w == types.float32:
        return _exp2_float32
    if w == types.float64:
        return lambda w: np.exp2(w)
    return None
