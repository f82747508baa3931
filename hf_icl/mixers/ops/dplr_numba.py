"""Compiled CPU form of the DPLR recurrence (numba; optional, dispatched by :func:`.delta_rule.dplr_recurrence`).

Same maths as `dplr_chunked` (DeltaNet, Gated DeltaNet, RWKV-7) and, without the low-rank term, as the linear
recurrences of `linear_recurrence` (Mamba-2):

    w_t = a_tᵀ S_{t−1},   S_t = diag(exp g_t) S_{t−1} + b_t w_tᵀ + k_t v_tᵀ,   o_t = q_tᵀ S_t

run step by step, one (Dk, Dv) state per batch row and head held in L1 cache: each step is a few passes over Dk·Dv
numbers, vectorised over Dv. At the recipe's shape (T ≈ 384, Dk = Dv = 32) that is far less work than the chunked
form's (C, C) products, triangular solves and per-chunk Python, which dominate there. Nothing is divided by a decay,
so any g ≤ 0 is safe (the chunked form's per-key-dim path must bound the decay inside a chunk).

Forward: o, the final state, and a checkpoint of the state every `chunk` steps. Backward, per row and chunk from the
last: recompute the chunk's states and reads w from its checkpoint into a (chunk + 1, Dk, Dv) buffer, then run the
adjoint recurrence backwards, ∂S_{t−1} = diag(exp g_t) ∂S_t + a_t (∂w_t)ᵀ with ∂S_t gaining q_t (∂o_t)ᵀ, and
accumulate every gradient on the way (∂q, ∂k, ∂v, ∂a, ∂b, ∂g, ∂S_0). Arithmetic is in the inputs' dtype (the
caller passes float32, as the chunked form computes); fast-math is limited to `contract` (and `reassoc` in the
backward's sums), so inf, NaN and 0 stay exact.

Threads: each kernel is single-threaded and releases the GIL; the caller cuts the rows (batch × heads) into one slice
per torch thread (`kernel_threads.run_sliced`); rows are independent, so the result is the same bits.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit
from torch.autograd.function import once_differentiable

from .kernel_threads import run_sliced, thread_count
from .precision import autocast_off

OPTIONS = dict(cache=True, fastmath={"contract"}, error_model="numpy", nogil=True)
CHECKPOINT_ELEMENTS = 2**15  # cap on steps·Dk·Dv: the backward's buffer of a chunk's states (fp32: 128 KB) stays in L2
MAX_CHECKPOINT_STEPS = 64


@njit(**OPTIONS)
def _advance(q, k, v, a, b, g, low_rank, r, t, states, s, reads, w, out, emit):
    """Step t of row r in place on states[s] (Dk, Dv): reads[w] = aᵀ S (Dv,), S ← diag(exp g) S + b readᵀ + k vᵀ, and
    with `emit` out[r, t] = qᵀ S (Dv,). q, k, a, b: (R, T, Dk); v, out: (R, T, Dv); g: (R, T, G) with G = 1 (one
    decay for every key dimension) or Dk.
    Everything is indexed in full (arrays and indices, never a row view): a view costs an atomic reference count
    update each, which at Dk·Dv ≈ 10³ per step is a large share of the step. (In place on purpose: with a separate
    source array LLVM no longer vectorises the update, 4x slower.)"""
    keys, values = states.shape[1], states.shape[2]
    if low_rank:
        for j in range(values):
            reads[w, j] = 0
        for i in range(keys):
            a_i = a[r, t, i]
            for j in range(values):
                reads[w, j] += a_i * states[s, i, j]
    if emit:
        for j in range(values):
            out[r, t, j] = 0
    per_key = g.shape[2] > 1
    decay = np.exp(g[r, t, 0])
    for i in range(keys):
        if per_key:
            decay = np.exp(g[r, t, i])
        k_i, q_i = k[r, t, i], q[r, t, i]
        b_i = b[r, t, i] if low_rank else k_i  # (unread without the low-rank term)
        if low_rank and emit:
            for j in range(values):
                x = decay * states[s, i, j] + b_i * reads[w, j] + k_i * v[r, t, j]
                states[s, i, j] = x
                out[r, t, j] += q_i * x
        elif low_rank:
            for j in range(values):
                states[s, i, j] = decay * states[s, i, j] + b_i * reads[w, j] + k_i * v[r, t, j]
        elif emit:
            for j in range(values):
                x = decay * states[s, i, j] + k_i * v[r, t, j]
                states[s, i, j] = x
                out[r, t, j] += q_i * x
        else:
            for j in range(values):
                states[s, i, j] = decay * states[s, i, j] + k_i * v[r, t, j]


@njit(**OPTIONS)
def _copy(source, s, target, u):
    """target[u] = source[s] for (·, Dk, Dv) arrays, as a plain loop (numba's slice assignment is several times
    slower, and a view per call costs a reference count update)."""
    for i in range(source.shape[1]):
        for j in range(source.shape[2]):
            target[u, i, j] = source[s, i, j]


@njit(**OPTIONS)
def dplr_forward(q, k, v, a, b, g, low_rank, state, out, checkpoints, chunk):
    """Run rows of the recurrence from `state` (R, Dk, Dv), updated in place to the final states; writes out
    (R, T, Dv) and the state before steps 0, chunk, 2·chunk, … into checkpoints (R, ⌈T/chunk⌉, Dk, Dv).
    q, k, a, b: (R, T, Dk); v: (R, T, Dv); g: (R, T, G). `low_rank` False skips the b aᵀ term (a, b unread)."""
    rows, length = q.shape[0], q.shape[1]
    read = np.empty((1, v.shape[2]), v.dtype)
    for r in range(rows):
        for t in range(length):
            if t % chunk == 0:
                _copy(state, r, checkpoints[r], t // chunk)
            _advance(q, k, v, a, b, g, low_rank, r, t, state, r, read, 0, out, True)


@njit(cache=True, fastmath={"contract", "reassoc"}, error_model="numpy", nogil=True)
def dplr_backward(
    q, k, v, a, b, g, low_rank, checkpoints, chunk, grad_out, grad_state,
    grad_q, grad_k, grad_v, grad_a, grad_b, grad_g,
):  # fmt: skip
    """Gradients of `dplr_forward` (same inputs and `checkpoints`) given ∂o (R, T, Dv) and ∂(final state)
    `grad_state` (R, Dk, Dv), which is overwritten with ∂(initial state). Writes grad_q, grad_k, grad_a, grad_b
    (R, T, Dk), grad_v (R, T, Dv) and grad_g (R, T, G)."""
    rows, length, keys = q.shape
    values = v.shape[2]
    states = np.empty((chunk + 1, keys, values), v.dtype)  # the states before and after each step of a chunk
    reads = np.empty((chunk, values), v.dtype)
    per_key = g.shape[2] > 1  # one decay per key dimension (else one for the whole state)
    grad_read = np.empty(values, v.dtype)
    grad_log_decay = np.empty(keys, v.dtype)
    decay_terms = np.empty(values, v.dtype)  # one decay: Σ_i ∂S_t[i, ·] ⊙ S_{t−1}[i, ·], summed over i as vectors
    for r in range(rows):
        for index in range(checkpoints.shape[1] - 1, -1, -1):
            start = index * chunk
            steps = min(chunk, length - start)
            _copy(checkpoints[r], index, states, 0)
            for j in range(steps):
                _copy(states, j, states, j + 1)
                _advance(q, k, v, a, b, g, low_rank, r, start + j, states, j + 1, reads, j, grad_out, False)
            for j in range(steps - 1, -1, -1):
                t = start + j
                # 2-D indexing throughout: a row view per key dimension costs an atomic reference count update
                # each, which made this loop several times slower than its arithmetic. grad_state[r] holds
                # ∂loss/∂S_t from the steps after t, then ∂loss/∂S_{t−1}.
                decay = np.exp(g[r, t, 0])
                for j2 in range(values):
                    grad_read[j2] = 0
                    grad_v[r, t, j2] = 0
                    decay_terms[j2] = 0
                for i in range(keys):
                    if per_key:
                        decay = np.exp(g[r, t, i])
                    q_i, k_i = q[r, t, i], k[r, t, i]
                    sum_q = sum_k = sum_b = sum_g = v.dtype.type(0)
                    if low_rank:
                        b_i = b[r, t, i]
                        for j2 in range(values):
                            total = grad_state[r, i, j2] + q_i * grad_out[r, t, j2]  # ∂loss/∂S_t[i, j2]
                            sum_q += states[j + 1, i, j2] * grad_out[r, t, j2]
                            sum_k += total * v[r, t, j2]
                            sum_b += total * reads[j, j2]
                            sum_g += total * states[j, i, j2]
                            grad_v[r, t, j2] += total * k_i
                            grad_read[j2] += total * b_i
                            grad_state[r, i, j2] = total * decay  # the decay's share of ∂loss/∂S_{t−1}
                    elif per_key:  # the same without the low-rank read (zero): two products and a store fewer
                        for j2 in range(values):
                            total = grad_state[r, i, j2] + q_i * grad_out[r, t, j2]
                            sum_q += states[j + 1, i, j2] * grad_out[r, t, j2]
                            sum_k += total * v[r, t, j2]
                            sum_g += total * states[j, i, j2]
                            grad_v[r, t, j2] += total * k_i
                            grad_state[r, i, j2] = total * decay
                    else:  # one decay: its gradient's terms summed as vectors, one horizontal sum per step
                        for j2 in range(values):
                            total = grad_state[r, i, j2] + q_i * grad_out[r, t, j2]
                            sum_q += states[j + 1, i, j2] * grad_out[r, t, j2]
                            sum_k += total * v[r, t, j2]
                            decay_terms[j2] += total * states[j, i, j2]
                            grad_v[r, t, j2] += total * k_i
                            grad_state[r, i, j2] = total * decay
                    grad_q[r, t, i] = sum_q
                    grad_k[r, t, i] = sum_k
                    grad_b[r, t, i] = sum_b
                    grad_log_decay[i] = sum_g * decay
                if per_key:
                    for i in range(keys):
                        grad_g[r, t, i] = grad_log_decay[i]
                elif low_rank:
                    grad_g[r, t, 0] = grad_log_decay.sum()
                else:
                    grad_g[r, t, 0] = decay_terms.sum() * decay
                for i in range(keys):  # read = Sᵀ_{t−1} a: ∂S_{t−1} += a ∂readᵀ, ∂a = S_{t−1} ∂read
                    a_i = a[r, t, i]
                    sum_a = v.dtype.type(0)
                    if low_rank:
                        for j2 in range(values):
                            grad_state[r, i, j2] += a_i * grad_read[j2]
                            sum_a += states[j, i, j2] * grad_read[j2]
                    grad_a[r, t, i] = sum_a


def checkpoint_steps(keys: int, values: int) -> int:
    """Steps between two state checkpoints: as many (Dk, Dv) states as fit in `CHECKPOINT_ELEMENTS`, 1 to 64."""
    return max(1, min(MAX_CHECKPOINT_STEPS, CHECKPOINT_ELEMENTS // (keys * values)))


class NumbaDPLR(torch.autograd.Function):
    """Autograd function of the compiled recurrence on rows (batch × heads) of contiguous float tensors.

    forward(q, k, a, b (R, T, Dk), v (R, T, Dv), g (R, T, G), S_0 (R, Dk, Dv), low_rank) returns o (R, T, Dv) and
    the final state (R, Dk, Dv), in the inputs' dtype. First derivatives only.
    """

    @staticmethod
    @autocast_off
    def forward(ctx, q, k, v, a, b, g, initial_state, low_rank):
        rows, length, values = v.shape
        state = initial_state.clone()
        out = v.new_empty(rows, length, values)
        steps = checkpoint_steps(*state.shape[1:])
        checkpoints = v.new_empty(rows, -(-length // steps), *state.shape[1:])
        inputs = [t.detach().numpy() for t in (q, k, v, a, b, g)]
        outputs = [t.numpy() for t in (state, out, checkpoints)]
        arrays = inputs + outputs

        def run_rows(part, lo, hi):
            q_, k_, v_, a_, b_, g_, state_, out_, checkpoints_ = (x[lo:hi] for x in arrays)
            dplr_forward(q_, k_, v_, a_, b_, g_, low_rank, state_, out_, checkpoints_, steps)

        run_sliced(run_rows, rows, thread_count(q.numel() * values))
        ctx.save_for_backward(q, k, v, a, b, g, checkpoints)
        ctx.low_rank, ctx.steps = low_rank, steps
        return out, state

    @staticmethod
    @once_differentiable
    @autocast_off
    def backward(ctx, grad_out, grad_state):
        q, k, v, a, b, g, checkpoints = ctx.saved_tensors
        grad_out = torch.zeros_like(v) if grad_out is None else grad_out.contiguous()
        shape = (q.shape[0], q.shape[2], v.shape[2])
        carry = v.new_zeros(shape) if grad_state is None else grad_state.contiguous().clone()
        grads = [torch.empty_like(t) for t in (q, k, v, a, b, g)]
        arrays = [t.detach().numpy() for t in (q, k, v, a, b, g, checkpoints, grad_out, carry, *grads)]

        def run_rows(part, lo, hi):
            q_, k_, v_, a_, b_, g_, checkpoints_, grad_out_, carry_, *grads_ = (x[lo:hi] for x in arrays)
            inputs = (q_, k_, v_, a_, b_, g_, ctx.low_rank, checkpoints_, ctx.steps, grad_out_, carry_)
            dplr_backward(*inputs, *grads_)

        run_sliced(run_rows, q.shape[0], thread_count(q.numel() * v.shape[2]))
        return (*grads, carry, None)


def numba_dplr(q, k, v, a, b, log_decay=None, initial_state=None):
    """The recurrence of `dplr_chunked` through the compiled kernels: same arguments (a, b `None` for no low-rank
    term), same returns ((B, H, T, Dv) in v's dtype, final state (B, H, Dk, Dv) float32); computed in float32."""
    batch, heads, length, keys = q.shape
    values = v.shape[-1]
    low_rank = a is not None

    def rows(x, width):  # (B, H, T, ·) → (B·H, T, width) contiguous float32
        return x.float().expand(batch, heads, length, width).reshape(batch * heads, length, width).contiguous()

    zeros = q.new_zeros(1, 1, 1, 1)
    q_, k_, a_, b_ = (rows(x if x is not None else zeros, keys) for x in (q, k, a, b))
    v_ = rows(v, values)
    g_ = rows(zeros, 1) if log_decay is None else rows(log_decay, log_decay.shape[-1])
    if initial_state is None:
        state = q_.new_zeros(batch * heads, keys, values)
    else:
        state = initial_state.float().reshape(batch * heads, keys, values).contiguous()
    out, final = NumbaDPLR.apply(q_, k_, v_, a_, b_, g_, state, low_rank)
    return out.reshape(batch, heads, length, values).to(v.dtype), final.reshape(batch, heads, keys, values)
