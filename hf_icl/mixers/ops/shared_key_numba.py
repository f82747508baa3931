"""Compiled CPU form of a linear recurrence whose queries and keys are shared by every head (Mamba-2's SSD; numba).

Mamba-2 (one group) gives every head the same C (query) and B (key) and its own scalar decay, so its H heads of
P value columns are one recurrence with a (Dk, H·P) state whose columns decay per head:

    S_t = S_{t−1} ⊙ exp(g_t)[head(j)] + k_t v_tᵀ,   o_t = q_tᵀ S_t          (S_t ∈ R^{Dk × H·P} per batch row)

`linear_recurrence` takes this form where q and k are expanded over the heads (stride 0). Against the per-head
kernel (`dplr_numba`, rows = batch × heads of Dv = P) each step vectorises over H·P columns instead of P, q and k are
read once instead of once per head and never expanded into copies, and the gradients of the shared q and k are
summed over the heads inside the kernel (as the expand's backward would). The maths is `dplr_numba`'s without the
low-rank term, with the decay per value column instead of per key dimension: nothing is divided by a decay, so any
g ≤ 0 is safe.

Forward: o and the final state; nothing but the inputs is saved. Backward, per row: run the recurrence again from
S_0, keeping the state every `checkpoint_steps` steps in a buffer of that row only (a few MB, reused by the next row,
instead of the whole batch's checkpoints written by the forward: 50 MB per layer at the recipe's shape, whose page
faults and memory traffic cost more than the recomputation); then, per chunk from the last, recompute the chunk's
states from its checkpoint and run the adjoint recurrence backwards,
∂S_{t−1} = ∂S_t ⊙ exp(g_t), with ∂S_t gaining q_t (∂o_t)ᵀ, and accumulate ∂q, ∂k, ∂v, ∂g and ∂S_0. Arithmetic is
float32 with fast-math limited to `contract` (and `reassoc` in the backward's sums), so inf, NaN and 0 stay exact.
Rows are independent: `kernel_threads.run_sliced` cuts them into one slice per torch thread, same bits.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit
from torch.autograd.function import once_differentiable

from .dplr_numba import _copy  # target[u] = source[s], the plain loop both kernels use
from .kernel_threads import run_sliced, thread_count
from .precision import autocast_off

OPTIONS = dict(cache=True, fastmath={"contract"}, error_model="numpy", nogil=True)
CHECKPOINT_ELEMENTS = 2**16  # cap on steps·Dk·Dv: a chunk's states (fp32: 256 KB) stay in L2
MAX_CHECKPOINT_STEPS = 64


def checkpoint_steps(keys: int, values: int) -> int:
    """Steps between two state checkpoints: as many (Dk, Dv) states as fit in `CHECKPOINT_ELEMENTS`, 1 to 64."""
    return max(1, min(MAX_CHECKPOINT_STEPS, CHECKPOINT_ELEMENTS // (keys * values)))


@njit(**OPTIONS)
def _column_decays(g, r, t, group, decays):
    """decays[j] = exp(g[r, t, j // group]) for every value column j: g (R, T, H), decays (H·group,)."""
    for h in range(g.shape[2]):
        decay = np.exp(g[r, t, h])
        for p in range(group):
            decays[h * group + p] = decay


@njit(**OPTIONS)
def _advance(q, k, v, r, t, decays, states, s, out, emit):
    """Step t of row r in place on states[s] (Dk, Dv): S ← S ⊙ decays + k vᵀ, and with `emit` out[r, t] = qᵀ S.
    Full indexing throughout (a row view costs a reference count update), as `dplr_numba._advance`."""
    keys, values = states.shape[1], states.shape[2]
    if emit:
        for j in range(values):
            out[r, t, j] = 0
    for i in range(keys):
        k_i, q_i = k[r, t, i], q[r, t, i]
        if emit:
            for j in range(values):
                x = decays[j] * states[s, i, j] + k_i * v[r, t, j]
                states[s, i, j] = x
                out[r, t, j] += q_i * x
        else:
            for j in range(values):
                states[s, i, j] = decays[j] * states[s, i, j] + k_i * v[r, t, j]


@njit(**OPTIONS)
def shared_key_forward(q, k, v, g, group, state, out):
    """Rows of the recurrence from `state` (R, Dk, Dv), updated in place to the final states; writes out (R, T, Dv).
    q, k: (R, T, Dk); v: (R, T, Dv); g: (R, T, H) with Dv = H·group."""
    rows, length = q.shape[0], q.shape[1]
    decays = np.empty(v.shape[2], v.dtype)
    for r in range(rows):
        for t in range(length):
            _column_decays(g, r, t, group, decays)
            _advance(q, k, v, r, t, decays, state, r, out, True)


@njit(cache=True, fastmath={"contract", "reassoc"}, error_model="numpy", nogil=True)
def shared_key_backward(q, k, v, g, group, initial_state, chunk, grad_out, grad_state, grad_q, grad_k, grad_v, grad_g):
    """Gradients of `shared_key_forward` from `initial_state` (R, Dk, Dv) given ∂o (R, T, Dv) and ∂(final state)
    `grad_state` (R, Dk, Dv), which is overwritten with ∂(initial state). Writes grad_q, grad_k (R, T, Dk), grad_v
    (R, T, Dv) and grad_g (R, T, H). `chunk`: steps between two kept states."""
    rows, length, keys = q.shape
    values, heads = v.shape[2], g.shape[2]
    checkpoints = np.empty((-(-length // chunk), keys, values), v.dtype)  # one row's states before each chunk
    states = np.empty((chunk + 1, keys, values), v.dtype)  # the states before and after each step of a chunk
    decays = np.empty(values, v.dtype)
    decay_terms = np.empty(values, v.dtype)  # Σ_i ∂S_t[i, j] S_{t−1}[i, j] per column j, summed as vectors
    unused = np.empty((1, 1, 1), v.dtype)
    for r in range(rows):
        _copy(initial_state, r, states, 0)
        for t in range(length):  # the forward again, keeping the state before each chunk
            if t % chunk == 0:
                _copy(states, 0, checkpoints, t // chunk)
            _column_decays(g, r, t, group, decays)
            _advance(q, k, v, r, t, decays, states, 0, unused, False)
        for index in range(checkpoints.shape[0] - 1, -1, -1):
            start = index * chunk
            steps = min(chunk, length - start)
            _copy(checkpoints, index, states, 0)
            for j in range(steps):
                _copy(states, j, states, j + 1)
                _column_decays(g, r, start + j, group, decays)
                _advance(q, k, v, r, start + j, decays, states, j + 1, unused, False)
            for j in range(steps - 1, -1, -1):
                t = start + j
                _column_decays(g, r, t, group, decays)
                for j2 in range(values):
                    grad_v[r, t, j2] = 0
                    decay_terms[j2] = 0
                for i in range(keys):  # grad_state[r] holds ∂loss/∂S_t from the steps after t, then ∂loss/∂S_{t−1}
                    q_i, k_i = q[r, t, i], k[r, t, i]
                    sum_q = sum_k = v.dtype.type(0)
                    for j2 in range(values):
                        total = grad_state[r, i, j2] + q_i * grad_out[r, t, j2]  # ∂loss/∂S_t[i, j2]
                        sum_q += states[j + 1, i, j2] * grad_out[r, t, j2]
                        sum_k += total * v[r, t, j2]
                        decay_terms[j2] += total * states[j, i, j2]
                        grad_v[r, t, j2] += total * k_i
                        grad_state[r, i, j2] = total * decays[j2]
                    grad_q[r, t, i] = sum_q
                    grad_k[r, t, i] = sum_k
                for h in range(heads):
                    total = v.dtype.type(0)
                    for p in range(group):
                        total += decay_terms[h * group + p]
                    grad_g[r, t, h] = total * decays[h * group]


class SharedKeyRecurrence(torch.autograd.Function):
    """Autograd function of the compiled shared-key recurrence on rows (batch) of contiguous float tensors.

    forward(q, k (R, T, Dk), v (R, T, H·P), g (R, T, H), S_0 (R, Dk, H·P)) returns o (R, T, H·P) and the final state
    (R, Dk, H·P). First derivatives only.
    """

    @staticmethod
    @autocast_off
    def forward(ctx, q, k, v, g, initial_state):
        rows, length, values = v.shape
        group = values // g.shape[2]
        state = initial_state.clone()
        out = v.new_empty(rows, length, values)
        arrays = [t.detach().numpy() for t in (q, k, v, g, state, out)]

        def run_rows(part, lo, hi):
            q_, k_, v_, g_, state_, out_ = (x[lo:hi] for x in arrays)
            shared_key_forward(q_, k_, v_, g_, group, state_, out_)

        run_sliced(run_rows, rows, thread_count(q.numel() * values))
        ctx.save_for_backward(q, k, v, g, initial_state)
        ctx.group = group
        return out, state

    @staticmethod
    @once_differentiable
    @autocast_off
    def backward(ctx, grad_out, grad_state):
        q, k, v, g, initial_state = ctx.saved_tensors
        steps = checkpoint_steps(*initial_state.shape[1:])
        grad_out = torch.zeros_like(v) if grad_out is None else grad_out.contiguous()
        carry = v.new_zeros(q.shape[0], q.shape[2], v.shape[2]) if grad_state is None else grad_state.contiguous()
        carry = carry.clone()  # overwritten with ∂S_0
        grads = [torch.empty_like(t) for t in (q, k, v, g)]
        arrays = [t.detach().numpy() for t in (q, k, v, g, initial_state, grad_out, carry, *grads)]

        def run_rows(part, lo, hi):
            q_, k_, v_, g_, state_, grad_out_, carry_, *grads_ = (x[lo:hi] for x in arrays)
            shared_key_backward(q_, k_, v_, g_, ctx.group, state_, steps, grad_out_, carry_, *grads_)

        run_sliced(run_rows, q.shape[0], thread_count(q.numel() * v.shape[2]))
        return (*grads, carry)


def shared_key_recurrence(q, k, v, log_decay, initial_state=None):
    """`linear_recurrence`'s maths for q and k shared by the heads and one decay per head, through the kernels.

    Args:
        q, k: (B, H|1, T, Dk), the same for every head (expanded over them, or one head); v: (B, H, T, P);
            log_decay: (B, H, T, 1), ≤ 0.
        initial_state: (B, H, Dk, P) or `None` (zeros).

    Returns:
        out (B, H, T, P) in v's dtype and the final state (B, H, Dk, P) in float32.
    """
    batch, heads, length, values = v.shape
    keys = q.shape[-1]
    # (B, T, Dk); one head is squeezed, not selected: a select's backward zero-fills a (B, H, T, Dk) gradient
    q_, k_ = ((x.squeeze(1) if x.shape[1] == 1 else x[:, 0]).float().contiguous() for x in (q, k))
    v_ = v.float().transpose(1, 2).reshape(batch, length, heads * values).contiguous()  # (B, T, H·P)
    g_ = log_decay.float().expand(batch, heads, length, 1)[..., 0].transpose(1, 2).contiguous()  # (B, T, H)
    if initial_state is None:
        state = q_.new_zeros(batch, keys, heads * values)
    else:  # (B, H, Dk, P) → (B, Dk, H·P)
        state = initial_state.float().permute(0, 2, 1, 3).reshape(batch, keys, heads * values).contiguous()
    out, final = SharedKeyRecurrence.apply(q_, k_, v_, g_, state)
    out = out.view(batch, length, heads, values).transpose(1, 2)  # (B, H, T, P)
    return out.to(v.dtype), final.view(batch, keys, heads, values).permute(0, 2, 1, 3)
