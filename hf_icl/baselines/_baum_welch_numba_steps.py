"""Per-letter steps of the compiled Baum–Welch kernel (:mod:`._baum_welch_numba`), in M³ per letter.

Pair state (p, c) is entry ``[p, c]`` of an (M, M) array; the transition matrix is A = r 1ᵀ + Δ with
Δ_(i,j),(j,k) = D[j, i, k] and its transposed copy Dt[j, k, i] (see :mod:`.baum_welch`). Each step has a loop form
for any M and, for the paper's M = 12, a form unrolled over the 12 entries of a block row: the twelve running sums
live in registers and LLVM's SLP vectoriser packs them into SIMD registers (numba's loop vectoriser leaves 12-long
loops scalar). No sum is reassociated across a block row, so ``fastmath`` stays off.

numba caches a function per source file: after editing this file, delete the ``__pycache__`` entries of
``_baum_welch_numba`` too (its cached kernels inline these steps).
"""

from __future__ import annotations

from numba import njit


@njit(cache=True)
def scale_all(x, factor):
    """x *= factor, elementwise over a contiguous array of any shape."""
    flat = x.reshape(-1)
    for s in range(flat.shape[0]):
        flat[s] *= factor


@njit(cache=True)
def start_step(pi, bt, out):
    """α̂ of a string's first letter: out = π ⊙ B[:, x] / c; returns c. All (M, M)."""
    p, e, q = pi.reshape(-1), bt.reshape(-1), out.reshape(-1)
    c = 0.0
    for s in range(q.shape[0]):
        q[s] = p[s] * e[s]
        c += q[s]
    scale_all(out, 1.0 / c)
    return c


@njit(cache=True)
def forward_step(a, r, D, bt, out):
    """α̂_t = (α̂_{t-1} A) ⊙ B[:, x_t] / c_t into ``out``; returns c_t. a, r, bt, out: (M, M); D: (M, M, M)."""
    m = D.shape[0]
    if m == 12:
        return _forward_step12(a, r, D, bt, out)
    rs = 0.0
    for i in range(m):
        for j in range(m):
            rs += a[i, j] * r[i, j]
    c = 0.0
    for j in range(m):
        for k in range(m):
            out[j, k] = 0.0
        for i in range(m):
            w = a[i, j]
            for k in range(m):
                out[j, k] += w * D[j, i, k]
        for k in range(m):
            out[j, k] = (out[j, k] + rs) * bt[j, k]
            c += out[j, k]
    scale_all(out, 1.0 / c)
    return c


@njit(cache=True)
def backward_step(a, beta, bt, inv_c, r, Dt, xi, u):
    """One backward letter, in place: u = B[:, x_{t+1}] ⊙ β̂_{t+1} / c_{t+1}, then β̂_t = A u into ``beta`` and
    xi[j, i, k] += α̂_t(i, j) u(j, k) (ξ_t without its A factor). a = α̂_t, beta, bt, r, u: (M, M); Dt, xi: (M, M, M)."""
    m = Dt.shape[0]
    if m == 12:
        _backward_step12(a, beta, bt, inv_c, r, Dt, xi, u)
        return
    total = 0.0
    for j in range(m):
        for k in range(m):
            u[j, k] = bt[j, k] * beta[j, k] * inv_c
            total += u[j, k]
    for j in range(m):
        for i in range(m):
            beta[i, j] = 0.0
        for k in range(m):
            w = u[j, k]
            for i in range(m):
                beta[i, j] += w * Dt[j, k, i]
        for i in range(m):
            beta[i, j] += r[i, j] * total
            w = a[i, j]
            for k in range(m):
                xi[j, i, k] += w * u[j, k]


@njit(cache=True)
def _forward_step12(a, r, D, bt, out):
    p0 = p1 = p2 = p3 = p4 = p5 = p6 = p7 = p8 = p9 = p10 = p11 = 0.0
    for i in range(12):
        x, y = a[i], r[i]
        p0, p1, p2, p3 = p0 + x[0] * y[0], p1 + x[1] * y[1], p2 + x[2] * y[2], p3 + x[3] * y[3]
        p4, p5, p6, p7 = p4 + x[4] * y[4], p5 + x[5] * y[5], p6 + x[6] * y[6], p7 + x[7] * y[7]
        p8, p9, p10, p11 = p8 + x[8] * y[8], p9 + x[9] * y[9], p10 + x[10] * y[10], p11 + x[11] * y[11]
    rs = ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7)) + ((p8 + p9) + (p10 + p11))
    c0 = c1 = c2 = c3 = c4 = c5 = c6 = c7 = c8 = c9 = c10 = c11 = 0.0
    for j in range(12):
        o0 = o1 = o2 = o3 = o4 = o5 = o6 = o7 = o8 = o9 = o10 = o11 = 0.0
        for i in range(12):
            w, d = a[i, j], D[j, i]
            o0, o1, o2, o3 = o0 + w * d[0], o1 + w * d[1], o2 + w * d[2], o3 + w * d[3]
            o4, o5, o6, o7 = o4 + w * d[4], o5 + w * d[5], o6 + w * d[6], o7 + w * d[7]
            o8, o9, o10, o11 = o8 + w * d[8], o9 + w * d[9], o10 + w * d[10], o11 + w * d[11]
        e, q = bt[j], out[j]
        q[0], q[1], q[2], q[3] = (o0 + rs) * e[0], (o1 + rs) * e[1], (o2 + rs) * e[2], (o3 + rs) * e[3]
        q[4], q[5], q[6], q[7] = (o4 + rs) * e[4], (o5 + rs) * e[5], (o6 + rs) * e[6], (o7 + rs) * e[7]
        q[8], q[9], q[10], q[11] = (o8 + rs) * e[8], (o9 + rs) * e[9], (o10 + rs) * e[10], (o11 + rs) * e[11]
        c0, c1, c2, c3 = c0 + q[0], c1 + q[1], c2 + q[2], c3 + q[3]
        c4, c5, c6, c7 = c4 + q[4], c5 + q[5], c6 + q[6], c7 + q[7]
        c8, c9, c10, c11 = c8 + q[8], c9 + q[9], c10 + q[10], c11 + q[11]
    c = ((c0 + c1) + (c2 + c3)) + ((c4 + c5) + (c6 + c7)) + ((c8 + c9) + (c10 + c11))
    scale_all(out, 1.0 / c)
    return c


@njit(cache=True)
def _backward_step12(a, beta, bt, inv_c, r, Dt, xi, u):
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = s8 = s9 = s10 = s11 = 0.0
    for j in range(12):
        e, b, v = bt[j], beta[j], u[j]
        v[0], v[1], v[2], v[3] = e[0] * b[0] * inv_c, e[1] * b[1] * inv_c, e[2] * b[2] * inv_c, e[3] * b[3] * inv_c
        v[4], v[5], v[6], v[7] = e[4] * b[4] * inv_c, e[5] * b[5] * inv_c, e[6] * b[6] * inv_c, e[7] * b[7] * inv_c
        v[8], v[9], v[10], v[11] = (
            e[8] * b[8] * inv_c,
            e[9] * b[9] * inv_c,
            e[10] * b[10] * inv_c,
            e[11] * b[11] * inv_c,
        )
        s0, s1, s2, s3 = s0 + v[0], s1 + v[1], s2 + v[2], s3 + v[3]
        s4, s5, s6, s7 = s4 + v[4], s5 + v[5], s6 + v[6], s7 + v[7]
        s8, s9, s10, s11 = s8 + v[8], s9 + v[9], s10 + v[10], s11 + v[11]
    total = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)) + ((s8 + s9) + (s10 + s11))
    for j in range(12):
        v = u[j]
        b0 = b1 = b2 = b3 = b4 = b5 = b6 = b7 = b8 = b9 = b10 = b11 = 0.0
        for k in range(12):
            w, d = v[k], Dt[j, k]
            b0, b1, b2, b3 = b0 + w * d[0], b1 + w * d[1], b2 + w * d[2], b3 + w * d[3]
            b4, b5, b6, b7 = b4 + w * d[4], b5 + w * d[5], b6 + w * d[6], b7 + w * d[7]
            b8, b9, b10, b11 = b8 + w * d[8], b9 + w * d[9], b10 + w * d[10], b11 + w * d[11]
        beta[0, j], beta[1, j], beta[2, j], beta[3, j] = (
            b0 + r[0, j] * total,
            b1 + r[1, j] * total,
            b2 + r[2, j] * total,
            b3 + r[3, j] * total,
        )
        beta[4, j], beta[5, j], beta[6, j], beta[7, j] = (
            b4 + r[4, j] * total,
            b5 + r[5, j] * total,
            b6 + r[6, j] * total,
            b7 + r[7, j] * total,
        )
        beta[8, j], beta[9, j], beta[10, j], beta[11, j] = (
            b8 + r[8, j] * total,
            b9 + r[9, j] * total,
            b10 + r[10, j] * total,
            b11 + r[11, j] * total,
        )
        u0, u1, u2, u3 = v[0], v[1], v[2], v[3]
        u4, u5, u6, u7 = v[4], v[5], v[6], v[7]
        u8, u9, u10, u11 = v[8], v[9], v[10], v[11]
        for i in range(12):
            w, x = a[i, j], xi[j, i]
            x[0], x[1], x[2], x[3] = x[0] + w * u0, x[1] + w * u1, x[2] + w * u2, x[3] + w * u3
            x[4], x[5], x[6], x[7] = x[4] + w * u4, x[5] + w * u5, x[6] + w * u6, x[7] + w * u7
            x[8], x[9], x[10], x[11] = x[8] + w * u8, x[9] + w * u9, x[10] + w * u10, x[11] + w * u11
