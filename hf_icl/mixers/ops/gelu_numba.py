"""Compiled CPU tanh-GELU, forward and backward (numba; optional, dispatched by `modeling.activations.GELUTanh`).

GPT-2's GELU, gelu(x) = ½x(1 + tanh(z)) with z = √(2/π)(x + 0.044715x³), written through ½(1 + tanh z) = σ(2z):

    gelu(x) = x·s,   s = 1 / (1 + e^{−2z}),   gelu'(x) = s + x·s(1 − s)·2√(2/π)(1 + 3·0.044715x²).

One pass over the elements each way, e^{−2z} through the vectorisable 2^w of :mod:`.numba_math` (so LLVM
emits SIMD code; `error_model="numpy"` drops the per-element zero-division check that would stop it). For large
negative x, e^{−2z} saturates at inf and gelu(x) = x/inf = −0, the limit; for large positive x, s = 1 exactly; the
derivative takes its limits 0 and 1 there too (ATen's is NaN from |x| ≈ 1e13 on, where x³ overflows).
The backward recomputes s from x, so, as ATen's kernel, only the input is kept. ATen's own float32 tanh-GELU was
about three times slower than its sigmoid on the Xeon this was written on (an ad-hoc probe, not a committed
benchmark); what the kernel is worth in a whole training step, `benchmarks/transformer_vs_gpt2.py` prints (ours with
and without it). The kernel agrees with ATen's to a few float32 ulps and is checked against it and against float64
in `tests/test_gelu_numba.py`.

Scope: float32 on the CPU, first derivatives; the elements are cut into one slice per PyTorch thread, each
slice on its own thread (`kernel_threads`), with the same result bit for bit.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from numba import njit
from torch.autograd.function import once_differentiable

from .kernel_threads import run_in_slices
from .numba_math import scan_exp2
from .precision import autocast_off

CUBIC = np.float32(0.044715)
SLOPE = np.float32(2 * math.sqrt(2 / math.pi))  # 2z = SLOPE·(x + CUBIC·x³)
EXPONENT = np.float32(-2 * math.sqrt(2 / math.pi) / math.log(2))  # e^{−2z} = 2^(EXPONENT·(x + CUBIC·x³))
ZERO, ONE, THREE = np.float32(0.0), np.float32(1.0), np.float32(3.0)
OPTIONS = dict(cache=True, fastmath={"contract"}, error_model="numpy", nogil=True)


@njit(**OPTIONS)
def _gate(x):
    """s = σ(2z) = ½(1 + tanh z) for one float32 element."""
    return ONE / (ONE + scan_exp2(EXPONENT * (x + CUBIC * x * x * x)))


@njit(**OPTIONS)
def gelu_tanh_forward(x, out):
    """out = gelu(x) over flat float32 arrays."""
    for i in range(x.size):
        out[i] = x[i] * _gate(x[i])


@njit(**OPTIONS)
def gelu_tanh_backward(x, grad_out, grad_in):
    """grad_in = grad_out · gelu'(x) over flat float32 arrays."""
    for i in range(x.size):
        v = x[i]
        s = _gate(v)
        spread = s * (ONE - s)  # σ'(2z); 0 once saturated, where the next factor may be inf
        slope = v * spread * SLOPE * (ONE + THREE * CUBIC * v * v) if spread > ZERO else ZERO
        grad_in[i] = grad_out[i] * (s + slope)


class NumbaGELUTanh(torch.autograd.Function):
    """Autograd function of the compiled tanh-GELU: forward(x) → gelu(x), same shape; float32 on the CPU."""

    @staticmethod
    @autocast_off
    def forward(ctx, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        run_in_slices(gelu_tanh_forward, [x.detach().view(-1).numpy(), out.view(-1).numpy()])
        ctx.save_for_backward(x)
        return out

    @staticmethod
    @once_differentiable
    @autocast_off
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        grad_out = grad_out.contiguous()
        grad_in = torch.empty_like(x)
        run_in_slices(gelu_tanh_backward, [x.view(-1).numpy(), grad_out.view(-1).numpy(), grad_in.view(-1).numpy()])
        return grad_in
