"""Compiled CPU causal Toeplitz-gated mix (numba; optional): H3's short-sequence form without (T, T) maps.

    z_t = Σ_{j ≤ t} (q_t · k_j) K[t − j] v_j          q, k, v: (T, D) per batch row and head; K: (T,) per head

is `gated_toeplitz.gated_toeplitz_mix` with the map M_tj = K[t − j] (j ≤ t), the form H3's map always has (its
diagonal SSM's convolution kernel, with the skip D added at lag 0). The blocked matmul form spends its time in
batched products with an inner dimension of d_h = 8 (H3's tiny heads) over full (T, T) maps, half of them zeros above
the diagonal. Here each output row runs over the keys j ≤ t only, vectorised along j (k and v are read transposed,
(D, T), so every inner loop is contiguous in j), and no map is stored: the backward recomputes q_t · k_j. The
gradient of K is summed by lag, so the caller gets ∂K (H, T) directly instead of a (H, T, T) map gradient.

Arithmetic is in the inputs' dtype with `contract` (and `reassoc` for the sums over j) fast-math; each kernel is
single-threaded and releases the GIL, and the caller cuts the rows (batch × heads) into one slice per torch thread
(`kernel_threads.run_sliced`): z, ∂q, ∂k and ∂v are the same bits as one call, ∂K is summed per slice in float64.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit
from torch.autograd.function import once_differentiable

from .kernel_threads import run_sliced, thread_count
from .precision import autocast_off

OPTIONS = dict(cache=True, fastmath={"contract", "reassoc"}, error_model="numpy", nogil=True)


@njit(**OPTIONS)
def _scores(q_t, keys_t, length, out):
    """out[j] = q_t · k_j for j < length; keys_t (D, T) is k transposed."""
    out[:length] = 0
    for a in range(keys_t.shape[0]):
        q_a, k_a = q_t[a], keys_t[a]
        for j in range(length):
            out[j] += q_a * k_a[j]


@njit(**OPTIONS)
def toeplitz_forward(q, keys_t, values_t, reversed_lags, heads, z):
    """z (R, T, D) for rows r = (b, h) (h = r mod heads): q (R, T, D), keys_t, values_t (R, D, T) (k, v transposed),
    reversed_lags (H, T) with reversed_lags[h, T − 1 − l] = K_h[l]."""
    rows, length, dim = q.shape
    scores = np.empty(length, q.dtype)
    for r in range(rows):
        lags = reversed_lags[r % heads]
        for t in range(length):
            count, offset = t + 1, length - 1 - t  # keys j ≤ t; K[t − j] = lags[offset + j]
            _scores(q[r, t], keys_t[r], count, scores)
            for j in range(count):
                scores[j] *= lags[offset + j]
            for c in range(dim):
                value, total = values_t[r, c], q.dtype.type(0)
                for j in range(count):
                    total += scores[j] * value[j]
                z[r, t, c] = total


@njit(**OPTIONS)
def toeplitz_backward(q, keys_t, values_t, reversed_lags, heads, grad_z, grad_q, grad_keys_t, grad_values_t, grad_lags):
    """Gradients of `toeplitz_forward` given ∂z (R, T, D): writes grad_q (R, T, D), grad_keys_t, grad_values_t
    (R, D, T) and adds ∂(reversed_lags) into grad_lags (H, T) (float64)."""
    rows, length, dim = q.shape
    scores = np.empty(length, q.dtype)  # q_t · k_j
    pulls = np.empty(length, q.dtype)  # ∂z_t · v_j, then ∂loss/∂(q_t · k_j)
    lag_row = np.empty(length, q.dtype)  # this row's ∂(reversed lags)
    for r in range(rows):
        lags = reversed_lags[r % heads]
        grad_keys_t[r] = 0
        grad_values_t[r] = 0
        lag_row[:] = 0
        for t in range(length):
            count, offset = t + 1, length - 1 - t
            _scores(q[r, t], keys_t[r], count, scores)
            _scores(grad_z[r, t], values_t[r], count, pulls)
            for j in range(count):
                lag_row[offset + j] += scores[j] * pulls[j]  # ∂K[t − j] += (q_t · k_j)(∂z_t · v_j)
                pulls[j] *= lags[offset + j]  # ∂(q_t · k_j) = K[t − j] (∂z_t · v_j)
                scores[j] *= lags[offset + j]  # the gated weight of v_j in z_t
            for a in range(dim):
                q_a, key, grad_key, total = q[r, t, a], keys_t[r, a], grad_keys_t[r, a], q.dtype.type(0)
                for j in range(count):
                    total += pulls[j] * key[j]
                for j in range(count):
                    grad_key[j] += pulls[j] * q_a
                grad_q[r, t, a] = total
            for c in range(dim):
                dz_c, grad_value = grad_z[r, t, c], grad_values_t[r, c]
                for j in range(count):
                    grad_value[j] += scores[j] * dz_c
        grad_lags[r % heads] += lag_row


class NumbaToeplitzMix(torch.autograd.Function):
    """Autograd function: (q, k, v (B, H, T, D), lags K (H, T)) → z (B, H, T, D), z_t = Σ_{j≤t} (q_t·k_j) K[t−j] v_j.

    Contiguous float inputs of one dtype on the CPU; first derivatives only.
    """

    @staticmethod
    @autocast_off
    def forward(ctx, q, k, v, lags):
        batch, heads, length, dim = q.shape
        rows_q = q.detach().reshape(batch * heads, length, dim).contiguous()  # (R, T, D)
        keys_t, values_t = (x.detach().reshape(batch * heads, length, dim).transpose(1, 2).contiguous() for x in (k, v))
        reversed_lags = lags.detach().flip(-1).contiguous()  # (H, T)
        z = torch.empty_like(rows_q)
        arrays = [x.numpy() for x in (rows_q, keys_t, values_t, z)]

        def run_rows(part, lo, hi):  # batch rows lo..hi: every slice starts at head 0
            q_, k_, v_, z_ = (x[lo * heads : hi * heads] for x in arrays)
            toeplitz_forward(q_, k_, v_, reversed_lags.numpy(), heads, z_)

        run_sliced(run_rows, batch, thread_count(batch * heads * length * length * dim // 2))
        ctx.save_for_backward(rows_q, keys_t, values_t, reversed_lags)
        ctx.shape = q.shape
        return z.view(batch, heads, length, dim)

    @staticmethod
    @once_differentiable
    @autocast_off
    def backward(ctx, grad_z):
        rows_q, keys_t, values_t, reversed_lags = ctx.saved_tensors
        batch, heads, length, dim = ctx.shape
        grad_z = grad_z.reshape(batch * heads, length, dim).contiguous()
        grad_q, grad_keys_t, grad_values_t = (torch.empty_like(x) for x in (rows_q, keys_t, values_t))
        parts = min(batch, thread_count(batch * heads * length * length * dim // 2))
        grad_lags = torch.zeros(parts, heads, length, dtype=torch.float64)
        inputs = [x.numpy() for x in (rows_q, keys_t, values_t, grad_z, grad_q, grad_keys_t, grad_values_t)]

        def run_rows(part, lo, hi):  # batch rows lo..hi
            q_, k_, v_, grad_z_, *grads = (x[lo * heads : hi * heads] for x in inputs)
            toeplitz_backward(q_, k_, v_, reversed_lags.numpy(), heads, grad_z_, *grads, grad_lags[part].numpy())

        run_sliced(run_rows, batch, parts)
        shape = (batch, heads, dim, length)
        grad_k, grad_v = (g.view(shape).transpose(-1, -2) for g in (grad_keys_t, grad_values_t))  # (B, H, T, D)
        grad_lags = grad_lags.sum(0).flip(-1).to(reversed_lags.dtype)  # (H, T) in lag order
        return grad_q.view(batch, heads, length, dim), grad_k, grad_v, grad_lags


def toeplitz_mix(q, k, v, lags) -> torch.Tensor:
    """z_t = Σ_{j≤t} (q_t · k_j) K[t − j] v_j through the compiled kernels: q, k, v (B, H, T, D), lags K (H, T) (lag
    0 first); returns (B, H, T, D) in K's dtype (q, k, v are cast to it, as `gated_toeplitz_mix` does)."""
    q, k, v = (x.to(lags.dtype).contiguous() for x in (q, k, v))
    return NumbaToeplitzMix.apply(q, k, v, lags.contiguous())
