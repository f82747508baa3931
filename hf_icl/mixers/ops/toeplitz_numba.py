"""Compiled CPU causal Toeplitz-gated mix (numba; optional): H3's short-sequence form without (T, T) maps.

    z_t = Σ_{j ≤ t} (q_t · k_j) K[t − j] v_j          q, k, v: (T, D) per batch row and head; K: (T,) per head

is `gated_toeplitz.gated_toeplitz_mix` with the map M_tj = K[t − j] (j ≤ t), the form H3's map always has (its
diagonal SSM's convolution kernel, with the skip D added at lag 0). The blocked matmul form spends its time in
batched products with an inner dimension of d_h = 8 (H3's tiny heads) over full (T, T) maps, half of them zeros above
the diagonal. Here the output rows go four at a time (`ROWS`) over the keys j < t₀ + 4 only (the block's later keys
gated to 0), vectorised along j (k and v are read transposed, (D, T), so every inner loop is contiguous in j, and
each key and value read serves four rows: with it H3's training step went from 1.58 to 1.38 times the
Transformer's in `benchmarks/zoo_step_cost.py`, idle AMD EPYC), and no map is stored: the backward recomputes
q_t · k_j. The gradient of K is summed by lag, so the caller gets ∂K (H, T) directly instead of a (H, T, T)
map gradient. The score passes take four dimensions per sweep over the keys and the forward's value pass two value
columns, so that the four rows' partial sums are loaded and stored a quarter (a half) as often (0.83-0.92 of the
previous kernel's forward + backward at H3's tiny shape, B = 32, H = 8, T = 384, D = 8, AMD EPYC, one thread, beside
two other jobs; unrolling the backward's key and value passes the same way measured no gain and is not done).

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


ROWS = 4  # query rows per pass: each key and value column read from memory serves four outputs


@njit(**OPTIONS)
def _row_weights(queries, t0, rows, a):
    """queries[t0 + i, a] for the block's rows i < 4 (0 past `rows`)."""
    zero = queries.dtype.type(0)
    return (queries[t0, a], queries[t0 + 1, a] if rows > 1 else zero, queries[t0 + 2, a] if rows > 2 else zero,
            queries[t0 + 3, a] if rows > 3 else zero)


@njit(**OPTIONS)
def _block_scores(queries, t0, rows, vectors_t, count, out):
    """out[i, j] = queries[t0 + i] · vectors[j] for i < rows (the block's rows, the rest 0) and j < count;
    vectors_t (D, T) is the vectors transposed. The dimensions go four at a time: each pass over j loads four vector
    columns and updates the four rows once (a quarter of the loads and stores of the output rows)."""
    out[:, :count] = 0
    dim = vectors_t.shape[0]
    for a in range(0, dim - 3, 4):
        ca, cb, cc, cd = vectors_t[a], vectors_t[a + 1], vectors_t[a + 2], vectors_t[a + 3]
        q0a, q1a, q2a, q3a = _row_weights(queries, t0, rows, a)
        q0b, q1b, q2b, q3b = _row_weights(queries, t0, rows, a + 1)
        q0c, q1c, q2c, q3c = _row_weights(queries, t0, rows, a + 2)
        q0d, q1d, q2d, q3d = _row_weights(queries, t0, rows, a + 3)
        for j in range(count):
            xa, xb, xc, xd = ca[j], cb[j], cc[j], cd[j]
            out[0, j] += q0a * xa + q0b * xb + q0c * xc + q0d * xd
            out[1, j] += q1a * xa + q1b * xb + q1c * xc + q1d * xd
            out[2, j] += q2a * xa + q2b * xb + q2c * xc + q2d * xd
            out[3, j] += q3a * xa + q3b * xb + q3c * xc + q3d * xd
    for a in range(dim - dim % 4, dim):
        column = vectors_t[a]
        q0, q1, q2, q3 = _row_weights(queries, t0, rows, a)
        for j in range(count):
            x = column[j]
            out[0, j] += q0 * x
            out[1, j] += q1 * x
            out[2, j] += q2 * x
            out[3, j] += q3 * x


@njit(**OPTIONS)
def _gate(block, t0, rows, count, lags, length):
    """block[i, j] *= K[t0 + i − j] for keys j ≤ t0 + i, and 0 for the later keys of the block (j < count)."""
    for i in range(rows):
        t = t0 + i
        offset = length - 1 - t  # K[t − j] = lags[offset + j]
        for j in range(t + 1):
            block[i, j] *= lags[offset + j]
        for j in range(t + 1, count):
            block[i, j] = 0


@njit(**OPTIONS)
def _store_column(out, r, t0, rows, column, v0, v1, v2, v3):
    """out[r, t0 + i, column] = v_i for the block's rows i < rows."""
    out[r, t0, column] = v0
    if rows > 1:
        out[r, t0 + 1, column] = v1
    if rows > 2:
        out[r, t0 + 2, column] = v2
    if rows > 3:
        out[r, t0 + 3, column] = v3


@njit(**OPTIONS)
def toeplitz_forward(q, keys_t, values_t, reversed_lags, heads, z):
    """z (R, T, D) for rows r = (b, h) (h = r mod heads): q (R, T, D), keys_t, values_t (R, D, T) (k, v transposed),
    reversed_lags (H, T) with reversed_lags[h, T − 1 − l] = K_h[l]. Queries go `ROWS` at a time."""
    rows, length, dim = q.shape
    scores = np.empty((ROWS, length), q.dtype)
    for r in range(rows):
        lags = reversed_lags[r % heads]
        for t0 in range(0, length, ROWS):
            block = min(ROWS, length - t0)
            count = t0 + block  # keys j < count reach some row of the block
            _block_scores(q[r], t0, block, keys_t[r], count, scores)
            _gate(scores, t0, block, count, lags, length)
            for c in range(0, dim, 2):  # two value columns per pass over the scores (the last alone if D is odd)
                pair = c + 1 < dim
                value, other = values_t[r, c], values_t[r, c + 1 if pair else c]
                z0 = z1 = z2 = z3 = y0 = y1 = y2 = y3 = q.dtype.type(0)
                for j in range(count):
                    x, u = value[j], other[j]
                    s0, s1, s2, s3 = scores[0, j], scores[1, j], scores[2, j], scores[3, j]
                    z0 += s0 * x
                    z1 += s1 * x
                    z2 += s2 * x
                    z3 += s3 * x
                    y0 += s0 * u
                    y1 += s1 * u
                    y2 += s2 * u
                    y3 += s3 * u
                _store_column(z, r, t0, block, c, z0, z1, z2, z3)
                if pair:
                    _store_column(z, r, t0, block, c + 1, y0, y1, y2, y3)


@njit(**OPTIONS)
def toeplitz_backward(q, keys_t, values_t, reversed_lags, heads, grad_z, grad_q, grad_keys_t, grad_values_t, grad_lags):
    """Gradients of `toeplitz_forward` given ∂z (R, T, D): writes grad_q (R, T, D), grad_keys_t, grad_values_t
    (R, D, T) and adds ∂(reversed_lags) into grad_lags (H, T) (float64). Queries go `ROWS` at a time."""
    rows, length, dim = q.shape
    scores = np.empty((ROWS, length), q.dtype)  # q_t · k_j, then the gated weight of v_j in z_t
    pulls = np.empty((ROWS, length), q.dtype)  # ∂z_t · v_j, then ∂loss/∂(q_t · k_j)
    lag_row = np.empty(length, q.dtype)  # this row's ∂(reversed lags)
    for r in range(rows):
        lags = reversed_lags[r % heads]
        grad_keys_t[r] = 0
        grad_values_t[r] = 0
        lag_row[:] = 0
        for t0 in range(0, length, ROWS):
            block = min(ROWS, length - t0)
            count = t0 + block
            _block_scores(q[r], t0, block, keys_t[r], count, scores)
            _block_scores(grad_z[r], t0, block, values_t[r], count, pulls)
            for i in range(block):
                t = t0 + i
                offset = length - 1 - t
                for j in range(t + 1):
                    lag_row[offset + j] += scores[i, j] * pulls[i, j]  # ∂K[t − j] += (q_t · k_j)(∂z_t · v_j)
            _gate(scores, t0, block, count, lags, length)
            _gate(pulls, t0, block, count, lags, length)  # ∂(q_t · k_j) = K[t − j] (∂z_t · v_j)
            for a in range(dim):
                key, grad_key = keys_t[r, a], grad_keys_t[r, a]
                q0 = q[r, t0, a]
                q1 = q[r, t0 + 1, a] if block > 1 else q.dtype.type(0)
                q2 = q[r, t0 + 2, a] if block > 2 else q.dtype.type(0)
                q3 = q[r, t0 + 3, a] if block > 3 else q.dtype.type(0)
                g0 = g1 = g2 = g3 = q.dtype.type(0)
                for j in range(count):
                    x = key[j]
                    g0 += pulls[0, j] * x
                    g1 += pulls[1, j] * x
                    g2 += pulls[2, j] * x
                    g3 += pulls[3, j] * x
                    grad_key[j] += pulls[0, j] * q0 + pulls[1, j] * q1 + pulls[2, j] * q2 + pulls[3, j] * q3
                _store_column(grad_q, r, t0, block, a, g0, g1, g2, g3)
            for c in range(dim):
                grad_value = grad_values_t[r, c]
                d0 = grad_z[r, t0, c]
                d1 = grad_z[r, t0 + 1, c] if block > 1 else q.dtype.type(0)
                d2 = grad_z[r, t0 + 2, c] if block > 2 else q.dtype.type(0)
                d3 = grad_z[r, t0 + 3, c] if block > 3 else q.dtype.type(0)
                for j in range(count):
                    grad_value[j] += scores[0, j] * d0 + scores[1, j] * d1 + scores[2, j] * d2 + scores[3, j] * d3
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
