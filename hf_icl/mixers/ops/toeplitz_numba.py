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
two other jobs). The gate K[t − j] is fused into the last score pass's store, read from the reversed lags padded
with zeros on both sides (so j > t reads 0 and no row needs a branch), the first pass writes instead of adding to
zeros, and the backward's lag sum and both gates are one pass; the backward's value pass takes two columns per sweep;
k, v and their gradients are transposed per batch row and head in cache (with these, H3's step went from 1.315 to
1.145 times the Transformer's in `benchmarks/zoo_step_cost.py`, idle AMD EPYC, 2026-11-30).

Arithmetic is in the inputs' dtype with `contract` (and `reassoc` for the sums over j) fast-math; each kernel is
single-threaded and releases the GIL, and the caller cuts the batch rows into one slice per torch thread
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
PAD = ROWS - 1  # zeros on each side of the reversed lags: a block's rows read K at lags −3..T + 2 without a branch


@njit(**OPTIONS)
def _row_weights(queries, t0, rows, a):
    """queries[t0 + i, a] for the block's rows i < 4 (0 past `rows`)."""
    zero = queries.dtype.type(0)
    return (queries[t0, a], queries[t0 + 1, a] if rows > 1 else zero, queries[t0 + 2, a] if rows > 2 else zero,
            queries[t0 + 3, a] if rows > 3 else zero)


@njit(**OPTIONS)
def _four_dims(queries, t0, rows, vectors_t, a, count, out, first, lags, offset):
    """out[i, j] = (out[i, j] if not first else 0) + Σ_{a' = a..a+3} queries[t0 + i, a'] vectors_t[a', j] for the
    block's rows i < 4 and keys j < count, then, where offset ≥ 0, times the gate lags[offset − i + j]. Each pass over
    j loads four vector columns and stores each row once, the gate fused into that store (no zeroing or gating pass
    over the rows)."""
    ca, cb, cc, cd = vectors_t[a], vectors_t[a + 1], vectors_t[a + 2], vectors_t[a + 3]
    q0a, q1a, q2a, q3a = _row_weights(queries, t0, rows, a)
    q0b, q1b, q2b, q3b = _row_weights(queries, t0, rows, a + 1)
    q0c, q1c, q2c, q3c = _row_weights(queries, t0, rows, a + 2)
    q0d, q1d, q2d, q3d = _row_weights(queries, t0, rows, a + 3)
    if first and offset < 0:
        for j in range(count):
            xa, xb, xc, xd = ca[j], cb[j], cc[j], cd[j]
            out[0, j] = q0a * xa + q0b * xb + q0c * xc + q0d * xd
            out[1, j] = q1a * xa + q1b * xb + q1c * xc + q1d * xd
            out[2, j] = q2a * xa + q2b * xb + q2c * xc + q2d * xd
            out[3, j] = q3a * xa + q3b * xb + q3c * xc + q3d * xd
    elif offset < 0:
        for j in range(count):
            xa, xb, xc, xd = ca[j], cb[j], cc[j], cd[j]
            out[0, j] += q0a * xa + q0b * xb + q0c * xc + q0d * xd
            out[1, j] += q1a * xa + q1b * xb + q1c * xc + q1d * xd
            out[2, j] += q2a * xa + q2b * xb + q2c * xc + q2d * xd
            out[3, j] += q3a * xa + q3b * xb + q3c * xc + q3d * xd
    elif first:
        for j in range(count):
            xa, xb, xc, xd = ca[j], cb[j], cc[j], cd[j]
            out[0, j] = (q0a * xa + q0b * xb + q0c * xc + q0d * xd) * lags[offset + j]
            out[1, j] = (q1a * xa + q1b * xb + q1c * xc + q1d * xd) * lags[offset - 1 + j]
            out[2, j] = (q2a * xa + q2b * xb + q2c * xc + q2d * xd) * lags[offset - 2 + j]
            out[3, j] = (q3a * xa + q3b * xb + q3c * xc + q3d * xd) * lags[offset - 3 + j]
    else:
        for j in range(count):
            xa, xb, xc, xd = ca[j], cb[j], cc[j], cd[j]
            out[0, j] = (out[0, j] + q0a * xa + q0b * xb + q0c * xc + q0d * xd) * lags[offset + j]
            out[1, j] = (out[1, j] + q1a * xa + q1b * xb + q1c * xc + q1d * xd) * lags[offset - 1 + j]
            out[2, j] = (out[2, j] + q2a * xa + q2b * xb + q2c * xc + q2d * xd) * lags[offset - 2 + j]
            out[3, j] = (out[3, j] + q3a * xa + q3b * xb + q3c * xc + q3d * xd) * lags[offset - 3 + j]


@njit(**OPTIONS)
def _block_scores(queries, t0, rows, vectors_t, count, out, lags, offset):
    """out[i, j] = queries[t0 + i] · vectors[j] for the block's rows i < 4 (0 past `rows`) and keys j < count, times
    lags[offset − i + j] where offset ≥ 0 (the padded reversed lags: K[t0 + i − j], 0 for j > t0 + i). vectors_t
    (D, T) is the vectors transposed. The dimensions go four at a time (`_four_dims`); a remainder of D mod 4 goes
    one at a time and is gated in a pass of its own."""
    dim = vectors_t.shape[0]
    full = dim - dim % 4
    gate_in_groups = offset >= 0 and full == dim
    if full < dim:  # a remainder pass adds to the rows: start them at 0
        out[:, :count] = 0
    for a in range(0, full, 4):
        first = a == 0 and full == dim  # no remainder zeroed the rows first
        gate_offset = offset if gate_in_groups and a + 4 == full else -1
        _four_dims(queries, t0, rows, vectors_t, a, count, out, first, lags, gate_offset)
    for a in range(full, dim):
        column = vectors_t[a]
        q0, q1, q2, q3 = _row_weights(queries, t0, rows, a)
        for j in range(count):
            x = column[j]
            out[0, j] += q0 * x
            out[1, j] += q1 * x
            out[2, j] += q2 * x
            out[3, j] += q3 * x
    if offset >= 0 and not gate_in_groups:
        for i in range(ROWS):
            for j in range(count):
                out[i, j] *= lags[offset - i + j]


@njit(**OPTIONS)
def _store_column(out, t0, rows, column, v0, v1, v2, v3):
    """out[t0 + i, column] = v_i for the block's rows i < rows; out (T, D) is one batch row and head."""
    out[t0, column] = v0
    if rows > 1:
        out[t0 + 1, column] = v1
    if rows > 2:
        out[t0 + 2, column] = v2
    if rows > 3:
        out[t0 + 3, column] = v3


@njit(**OPTIONS)
def _transpose_into(rows, out):
    """out = rows transposed, e.g. one batch row and head of k (T, D) into (D, T) scratch, so that the inner loops
    run along j, and a gradient back."""
    for t in range(rows.shape[0]):
        for a in range(rows.shape[1]):
            out[a, t] = rows[t, a]


@njit(**OPTIONS)
def toeplitz_forward(q, k, v, padded_lags, z):
    """z (B, T, H, D) from q, k, v (B, T, H, D) (tokens first, as the projections write them; k and v are
    transposed per batch row and head into (D, T) scratch, in cache) and padded_lags (H, T + 2 PAD), the lags
    reversed between PAD zeros on each side: padded_lags[h, PAD + T − 1 − l] = K_h[l]. Queries go `ROWS` at a time;
    each block's gated scores are formed once and serve two value columns per pass."""
    batch, length, heads, dim = q.shape
    scores = np.empty((ROWS, length), q.dtype)
    keys, values = np.empty((dim, length), q.dtype), np.empty((dim, length), q.dtype)
    for r in range(batch * heads):
        b, h = r // heads, r % heads
        queries, out, lags = q[b, :, h], z[b, :, h], padded_lags[h]
        _transpose_into(k[b, :, h], keys)
        _transpose_into(v[b, :, h], values)
        for t0 in range(0, length, ROWS):
            block = min(ROWS, length - t0)
            count = t0 + block  # keys j < count reach some row of the block
            _block_scores(queries, t0, block, keys, count, scores, lags, PAD + length - 1 - t0)
            for c in range(0, dim, 2):
                pair = c + 1 < dim
                value, other = values[c], values[c + 1 if pair else c]
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
                _store_column(out, t0, block, c, z0, z1, z2, z3)
                if pair:
                    _store_column(out, t0, block, c + 1, y0, y1, y2, y3)


@njit(**OPTIONS)
def toeplitz_backward(q, k, v, padded_lags, grad_z, grad_q, grad_k, grad_v, grad_lags):
    """Gradients of `toeplitz_forward` given ∂z (B, T, H, D): writes grad_q, grad_k, grad_v (B, T, H, D) and adds
    ∂(padded_lags) into grad_lags (H, T + 2 PAD) (float64; the padding's entries are meaningless). Queries go `ROWS`
    at a time; the value pass takes two columns per sweep over the gated scores (unrolling the key pass the same way
    measured slower: its eight reductions and two streams spill)."""
    batch, length, heads, dim = q.shape
    zero = q.dtype.type(0)
    scores = np.empty((ROWS, length), q.dtype)  # q_t · k_j, then the gated weight of v_j in z_t
    pulls = np.empty((ROWS, length), q.dtype)  # ∂z_t · v_j, then ∂loss/∂(q_t · k_j)
    lag_row = np.empty(length + 2 * PAD, q.dtype)  # this row's ∂(padded lags)
    scratch = np.empty((4, dim, length), q.dtype)
    keys, values, grad_keys, grad_values = scratch[0], scratch[1], scratch[2], scratch[3]  # (D, T) each
    for r in range(batch * heads):
        b, h = r // heads, r % heads
        queries, lags = q[b, :, h], padded_lags[h]
        pulled, grad_queries = grad_z[b, :, h], grad_q[b, :, h]  # (T, D)
        _transpose_into(k[b, :, h], keys)
        _transpose_into(v[b, :, h], values)
        grad_keys[:] = 0
        grad_values[:] = 0
        lag_row[:] = 0
        for t0 in range(0, length, ROWS):
            block = min(ROWS, length - t0)
            count = t0 + block
            _block_scores(queries, t0, block, keys, count, scores, lags, -1)
            _block_scores(pulled, t0, block, values, count, pulls, lags, -1)
            for i in range(block):  # ∂K[t − j] += (q_t · k_j)(∂z_t · v_j); both gated by K[t − j] (0 for j > t)
                offset = PAD + length - 1 - t0 - i
                for j in range(count):
                    s, p, g = scores[i, j], pulls[i, j], lags[offset + j]
                    lag_row[offset + j] += s * p
                    scores[i, j] = s * g
                    pulls[i, j] = p * g
            for a in range(dim):
                key, grad_key = keys[a], grad_keys[a]
                q0, q1, q2, q3 = _row_weights(queries, t0, block, a)
                g0 = g1 = g2 = g3 = zero
                for j in range(count):
                    x = key[j]
                    g0 += pulls[0, j] * x
                    g1 += pulls[1, j] * x
                    g2 += pulls[2, j] * x
                    g3 += pulls[3, j] * x
                    grad_key[j] += pulls[0, j] * q0 + pulls[1, j] * q1 + pulls[2, j] * q2 + pulls[3, j] * q3
                _store_column(grad_queries, t0, block, a, g0, g1, g2, g3)
            for c in range(0, dim - 1, 2):
                grad_value, grad_other = grad_values[c], grad_values[c + 1]
                d0, d1, d2, d3 = _row_weights(pulled, t0, block, c)
                e0, e1, e2, e3 = _row_weights(pulled, t0, block, c + 1)
                for j in range(count):
                    s0, s1, s2, s3 = scores[0, j], scores[1, j], scores[2, j], scores[3, j]
                    grad_value[j] += s0 * d0 + s1 * d1 + s2 * d2 + s3 * d3
                    grad_other[j] += s0 * e0 + s1 * e1 + s2 * e2 + s3 * e3
            if dim % 2:
                c = dim - 1
                grad_value = grad_values[c]
                d0, d1, d2, d3 = _row_weights(pulled, t0, block, c)
                for j in range(count):
                    grad_value[j] += scores[0, j] * d0 + scores[1, j] * d1 + scores[2, j] * d2 + scores[3, j] * d3
        for x in range(length + 2 * PAD):
            grad_lags[h, x] += lag_row[x]
        _transpose_into(grad_keys, grad_k[b, :, h])  # (D, T) scratch → (T, D)
        _transpose_into(grad_values, grad_v[b, :, h])


class NumbaToeplitzMix(torch.autograd.Function):
    """Autograd function: (q, k, v (B, T, H, D), lags K (H, T)) → z (B, T, H, D), z_t = Σ_{j≤t} (q_t·k_j) K[t−j] v_j.

    Float inputs of one dtype on the CPU, tokens first (the projections' layout: no copies; the kernels transpose k, v
    and their gradients per batch row and head, in cache, which costs a fraction of ATen's strided copies of the whole
    tensors); first derivatives only.
    """

    @staticmethod
    @autocast_off
    def forward(ctx, q, k, v, lags):
        q, k, v = (x.detach().contiguous() for x in (q, k, v))  # (B, T, H, D)
        padded_lags = torch.nn.functional.pad(lags.detach().flip(-1), (PAD, PAD)).contiguous()  # (H, T + 2 PAD)
        z = torch.empty_like(q)
        arrays = [x.numpy() for x in (q, k, v, z)]
        batch, length, heads, dim = q.shape

        def run_rows(part, lo, hi):  # batch rows lo..hi
            q_, k_, v_, z_ = (x[lo:hi] for x in arrays)
            toeplitz_forward(q_, k_, v_, padded_lags.numpy(), z_)

        run_sliced(run_rows, batch, thread_count(batch * heads * length * length * dim // 2))
        ctx.save_for_backward(q, k, v, padded_lags)
        return z

    @staticmethod
    @once_differentiable
    @autocast_off
    def backward(ctx, grad_z):
        q, k, v, padded_lags = ctx.saved_tensors
        batch, length, heads, dim = q.shape
        grad_z = grad_z.contiguous()  # (B, T, H, D)
        grad_q, grad_k, grad_v = (torch.empty_like(x) for x in (q, k, v))
        parts = min(batch, thread_count(batch * heads * length * length * dim // 2))
        grad_lags = torch.zeros(parts, heads, length + 2 * PAD, dtype=torch.float64)
        inputs = [x.numpy() for x in (q, k, v, grad_z, grad_q, grad_k, grad_v)]

        def run_rows(part, lo, hi):  # batch rows lo..hi
            q_, k_, v_, grad_z_, *grads = (x[lo:hi] for x in inputs)
            toeplitz_backward(q_, k_, v_, padded_lags.numpy(), grad_z_, *grads, grad_lags[part].numpy())

        run_sliced(run_rows, batch, parts)
        grad_lags = grad_lags.sum(0)[:, PAD : PAD + length].flip(-1).to(padded_lags.dtype)  # (H, T) in lag order
        return grad_q, grad_k, grad_v, grad_lags


def toeplitz_mix(q, k, v, lags) -> torch.Tensor:
    """z_t = Σ_{j≤t} (q_t · k_j) K[t − j] v_j through the compiled kernels: q, k, v (B, T, H, D) (tokens first), lags K
    (H, T) (lag 0 first); returns (B, T, H, D) in K's dtype (q, k, v are cast to it, as `gated_toeplitz_mix` does)."""
    q, k, v = (x.to(lags.dtype) for x in (q, k, v))
    return NumbaToeplitzMix.apply(q, k, v, lags.contiguous())
