"""Compiled CPU WKV of RWKV-4, forward and backward (numba; optional, dispatched by :func:`..rwkv.wkv`).

The same maths as the official RWKV-4 kernels (`wkv_cuda.cu`) and as `rwkv.wkv_step`, one pass over time per
batch row with the channels innermost (vectorised by LLVM, exponentials through :func:`.numba_math.scan_exp`):

    A_t = e^{−w} A_{t−1} + e^{k_t} v_t,   B_t = e^{−w} B_{t−1} + e^{k_t},
    z_t = (A_{t−1} + e^{u+k_t} v_t) / (B_{t−1} + e^{u+k_t}),

kept as (a, b, p) with A = a·e^p, B = b·e^p and p the running largest exponent, so nothing overflows. The torch
chunked form (`rwkv.wkv_chunked`) spends O(T·C) work per channel in (C × C) logit blocks; this is O(T) per channel,
which at the in-context-regression length (T = 82) is most of an RWKV training step.

Backward (derived for this file; it is checked against autograd through `wkv_chunked`): with adjoints
α_t = ∂L/∂A_t and β_t = ∂L/∂B_t of the state after step t, D_t = B_{t−1} + e^{u+k_t} and g_t = ∂L/∂z_t,

    α_{t−1} = g_t / D_t + e^{−w} α_t,      β_{t−1} = −g_t z_t / D_t + e^{−w} β_t,
    ∂k_t = e^{k_t}(α_t v_t + β_t) + g_t (v_t − z_t) e^{u+k_t} / D_t,   ∂v_t = e^{k_t} α_t + g_t e^{u+k_t} / D_t,
    ∂u = Σ_t g_t (v_t − z_t) e^{u+k_t} / D_t,   ∂w = −Σ_t e^{−w} (α_t A_{t−1} + β_t B_{t−1}).

The adjoints are kept the same way, (α, β) = (ga, gb)·e^o with o their running largest exponent, and every
exponential taken is of a difference that is ≤ 0 up to w (p_{s−1} ≥ k_t − w·(s−1−t) for t < s), so none overflows.
The forward stores the state before each step (3·B·T·C floats) for the backward.

Scope: float32, no initial state and no padding mask (training and prefill from an empty state); the torch path
serves the rest. Threads: single-threaded, as the selective scan's kernels (see there).
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit
from torch.autograd.function import once_differentiable

from .numba_math import scan_exp
from .precision import autocast_off

NEG = np.float32(-1e38)  # "log 0" of the empty state, as in `rwkv.NEG` and the official kernels
FASTMATH = {"contract"}  # fused multiply-adds only
# error_model="numpy" on the kernels: numba's default checks every division for a zero divisor, element by element,
# which keeps LLVM from vectorising the loops over channels (see benchmarks/cpu_kernels.py)


@njit(cache=True)
def _empty_state(carry):
    """(0, 0, log 0) into the rows of `carry` (3, C): an empty state, or a zero adjoint at exponent log 0."""
    carry[0] = 0
    carry[1] = 0
    carry[2] = NEG


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def wkv_forward(w, u, k, v, z, a_before, b_before, p_before, a_final, b_final, p_final):
    """z (B, T, C) and the states before each step (a, b, p: (B, T, C) each) from w, u (C,) and k, v (B, T, C);
    a_final, b_final, p_final (B, C) get (a, b, p) after the last step."""
    batch, length, channels = k.shape
    carry = np.empty((3, channels), k.dtype)
    a, b, p = carry[0], carry[1], carry[2]  # the state (a, b, p) of one batch row
    for n in range(batch):
        _empty_state(carry)
        for t in range(length):
            k_t, v_t, z_t = k[n, t], v[n, t], z[n, t]
            a_t, b_t, p_t = a_before[n, t], b_before[n, t], p_before[n, t]
            for c in range(channels):
                a_t[c], b_t[c], p_t[c] = a[c], b[c], p[c]
                own = u[c] + k_t[c]
                top = p[c] if p[c] > own else own
                old, new = scan_exp(p[c] - top), scan_exp(own - top)
                z_t[c] = (old * a[c] + new * v_t[c]) / (old * b[c] + new)
                decayed = p[c] - w[c]
                top = decayed if decayed > k_t[c] else k_t[c]
                old, new = scan_exp(decayed - top), scan_exp(k_t[c] - top)
                a[c] = old * a[c] + new * v_t[c]
                b[c] = old * b[c] + new
                p[c] = top
        a_final[n] = a
        b_final[n] = b
        p_final[n] = p


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def wkv_backward(w, u, k, v, z, a_before, b_before, p_before, grad_z, grad_k, grad_v, grad_w, grad_u):
    """Gradients of `wkv_forward` given ∂z (B, T, C): writes grad_k, grad_v (B, T, C) and adds into grad_w, grad_u
    (C,) (float64). The final state's gradient is taken as zero."""
    batch, length, channels = k.shape
    carry = np.empty((3, channels), k.dtype)
    ga, gb, o = carry[0], carry[1], carry[2]  # the adjoints (α, β) = (ga, gb)·e^o of one batch row's state
    sums = np.empty((2, channels), k.dtype)
    sum_w, sum_u = sums[0], sums[1]
    for n in range(batch):
        _empty_state(carry)
        sums[:] = 0
        for t in range(length - 1, -1, -1):
            k_t, v_t, z_t, g_t = k[n, t], v[n, t], z[n, t], grad_z[n, t]
            a_t, b_t, p_t = a_before[n, t], b_before[n, t], p_before[n, t]
            gk_t, gv_t = grad_k[n, t], grad_v[n, t]
            for c in range(channels):
                # through the state after step t: A_t = e^{−w} A_{t−1} + e^{k_t} v_t (and B_t)
                carried = scan_exp(k_t[c] + o[c])
                from_state_k = carried * (ga[c] * v_t[c] + gb[c])
                from_state_v = carried * ga[c]
                sum_w[c] -= scan_exp(o[c] + p_t[c] - w[c]) * (ga[c] * a_t[c] + gb[c] * b_t[c])
                # through z_t's own term e^{u+k_t}: 1/D_t = e^{−top}/d
                own = u[c] + k_t[c]
                top = p_t[c] if p_t[c] > own else own
                d = b_t[c] * scan_exp(p_t[c] - top) + scan_exp(own - top)
                weight = scan_exp(own - top) / d  # e^{u+k_t} / D_t
                to_own = g_t[c] * (v_t[c] - z_t[c]) * weight
                sum_u[c] += to_own
                gk_t[c] = from_state_k + to_own
                gv_t[c] = from_state_v + g_t[c] * weight
                # adjoint of the state before step t
                decayed = o[c] - w[c]
                next_o = decayed if decayed > -top else -top
                keep, add = scan_exp(decayed - next_o), scan_exp(-top - next_o) / d
                ga[c] = ga[c] * keep + g_t[c] * add
                gb[c] = gb[c] * keep - g_t[c] * z_t[c] * add
                o[c] = next_o
        for c in range(channels):
            grad_w[c] += sum_w[c]
            grad_u[c] += sum_u[c]


class NumbaWKV(torch.autograd.Function):
    """Autograd function of the compiled WKV: forward(w, u (C,), k, v (B, T, C)) returns z (B, T, C) and the final
    state (a, b, p) (B, C) each, the state without gradient. float32, contiguous; first derivatives only."""

    @staticmethod
    @autocast_off
    def forward(ctx, w, u, k, v):
        batch, length, channels = k.shape
        z = torch.empty_like(k)
        before = k.new_empty(3, batch, length, channels)  # (a, b, p) before each step
        final = [k.new_empty(batch, channels) for _ in range(3)]  # (a, b, p) after the last step
        arrays = [t.detach().numpy() for t in (w, u, k, v, z, *before, *final)]
        wkv_forward(*arrays)
        ctx.save_for_backward(w, u, k, v, z, before)
        ctx.mark_non_differentiable(*final)
        return z, *final

    @staticmethod
    @once_differentiable
    @autocast_off
    def backward(ctx, grad_z, *grad_final):
        w, u, k, v, z, before = ctx.saved_tensors
        grad_z = torch.zeros_like(z) if grad_z is None else grad_z.contiguous()
        grad_k, grad_v = torch.empty_like(k), torch.empty_like(v)
        grad_w, grad_u = torch.zeros(w.shape, dtype=torch.float64), torch.zeros(u.shape, dtype=torch.float64)
        arrays = [t.detach().numpy() for t in (w, u, k, v, z, *before, grad_z, grad_k, grad_v, grad_w, grad_u)]
        wkv_backward(*arrays)
        return grad_w.to(w.dtype), grad_u.to(u.dtype), grad_k, grad_v
