"""Decays of the chunked linear recurrence (`linear_recurrence.chunked_linear_attention`), prepared per chunk.

With g ≤ 0 the log decays and b_i = Σ_{s ≤ i} g_s their prefix sums inside a chunk of C positions (accumulated in
float64, and differences taken before exponentiating, so every exponent below is ≤ 0 where it is not clamped):

- one constant decay per head (RetNet; or any per-head decay that needs no gradient): the (C, C) mask
  M_ij = exp(b_i − b_j) for j ≤ i and the scales exp(b_i), exp(b_C − b_j) (`head_decays`); a decay fixed over
  batch and time gives them once for all chunks;
- a decay per key dimension (GLA), or a per-head decay that needs a gradient: no (C, C) mask exists, so the
  intra-chunk scores factor exp(b_i − b_j) = exp(b_i) · exp(−b_j) into q and k (GLA's chunk-level form) on every
  chunk whose total decay stays within SAFE_EXPONENT, where both factors lie in [e^−30, e^30] and are exact in
  float32; chunks that decay harder are tiled into sub-chunks whose off-diagonal blocks factor around the
  sub-chunk boundaries, and only sub-chunks that themselves decay beyond the bound form explicit (c, c, Dk)
  products (`key_dim_scores`, `tiled_scores`).
  `KeyDimDecays` makes the factors with a hand-written backward:

      ∂L/∂b_i = q_i · ∂L/∂q_i − k_i · ∂L/∂k_i   (q and k enter only through q_i e^{b_i}, k_j e^{−b_j}, k_j e^{b_C−b_j})
      ∂L/∂b_C += Σ_j (k_j e^{b_C − b_j}) · ∂L/∂k̃_j + e^{b_C} ∂L/∂γ,    ∂L/∂g_s = Σ_{i ≥ s} ∂L/∂b_i

  which is about a third of the elementwise passes autograd makes through the same expressions.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .precision import autocast_off

SAFE_EXPONENT = 30.0  # per-key-dim decays: factor exp(b_i − b_j) into q and k while |b| ≤ this inside a chunk
SUBCHUNK_SIZE = 16  # sub-chunk length of `tiled_scores`, as flash-linear-attention's chunk_gla
SUBCHUNK_FACTOR = 4  # sub-chunks that decay too hard are tiled again, 4× finer, down to explicit 4 × 4 blocks


def decay_mask(b, causal):
    """exp(b_i − b_j) for j ≤ i, else 0: (..., C, C, G) from float64 prefix sums b (..., C, G)."""
    return (b[..., :, None, :] - b[..., None, :, :]).float().masked_fill(~causal[..., None], float("-inf")).exp()


class HeadDecayMask(torch.autograd.Function):
    """E_ij = exp(r_i − c_j) where `allowed` (C, C) holds, else 0, as float32 (..., C, C), from float64 prefix sums
    r, c (..., C), with their gradients: the (C, C) decay masks of a per-head decay that needs one (Mamba-2's Δ A,
    Gated DeltaNet's α; r = c = b, or r = b_{t−1} and c = b for the masks of the reads).

    With W = ∂L/∂E ⊙ E: ∂L/∂r_i = Σ_j W_ij and ∂L/∂c_j = −Σ_i W_ij. Autograd through the float64 difference made
    the same gradients with (C, C) float64 tensors (the broadcast difference's backward: sums, a negation, a cast
    each way), the costliest elementwise passes of those mixers' steps on the CPU; here it is one float32 product
    and two sums accumulated in float64.
    """

    @staticmethod
    @autocast_off
    def forward(ctx, rows, cols, allowed):
        exponents = (rows[..., :, None] - cols[..., None, :]).float()  # (..., C, C): r_i − c_j
        decays = exponents.masked_fill_(~allowed, float("-inf")).exp_()
        ctx.save_for_backward(decays)
        return decays

    @staticmethod
    @autocast_off
    def backward(ctx, grad_decays):
        (decays,) = ctx.saved_tensors
        weighted = grad_decays * decays  # (..., C, C): ∂L/∂(r_i − c_j)
        # summed in float64, as autograd summed the float64 difference's gradient (the sums cancel in b = r = c)
        grad_rows = weighted.sum(-1, dtype=torch.float64) if ctx.needs_input_grad[0] else None
        grad_cols = -weighted.sum(-2, dtype=torch.float64) if ctx.needs_input_grad[1] else None
        return grad_rows, grad_cols, None


def explicit_scores(query, key, b):
    """A_ij = Σ_d q_id k_jd exp(b_id − b_jd) for j ≤ i, formed as (M, C, C, Dk) products: (M, C, C).

    Args:
        query, key: (M, C, Dk); b: (M, C, Dk) float64 prefix sums of the log decays.
    """
    causal = torch.ones(query.shape[1], query.shape[1], dtype=torch.bool, device=query.device).tril()
    return (decay_mask(b, causal) * key[:, None] * query[:, :, None]).sum(-1)


def even_chunk_size(length: int, largest: int) -> int:
    """The chunk length C ≤ `largest` that cuts T into the fewest chunks with the least padding: ⌈T / ⌈T / largest⌉⌉.

    A fixed C pads the last chunk to C (T = 82 with C = 64 computes 128 positions); equal chunks of
    ⌈T / N⌉ for the same N do the same number of chunk steps on at most N − 1 padded positions.
    """
    chunks = -(-length // max(1, largest))
    return max(1, -(-length // max(1, chunks)))


def head_decays(log_decay, batch, length, size, causal):
    """Mask and scales of one decay per head.

    Args:
        log_decay: g (B|1, H|1, T|1, 1), without gradient.
        batch, length, size: B, T and the chunk length C.
        causal: (C, C) boolean, j ≤ i.

    Returns:
        `(mask, query_scale, key_scale, decay)`: M (B|1, H, N|1, C, C), exp(b_i) (B|1, H, N|1, C, 1),
        exp(b_C − b_j) (B|1, H, N, C, 1) and γ = exp(b_C) (B|1, H, N, 1, 1); positions past the end add nothing.
    """
    n = -(-length // size)
    if log_decay.shape[0] == 1 and log_decay.shape[2] == 1:  # fixed over batch and time: b_i = (i + 1) g
        g = log_decay.double()[:, :, None]  # (1, H|1, 1, 1, 1)
        steps = torch.arange(1, size + 1, device=g.device, dtype=g.dtype)  # (C,): i + 1
        real = (length - size * torch.arange(n, device=g.device, dtype=g.dtype)).clamp(max=size)  # (N,)
        b, total = g * steps[:, None], g * real[:, None, None]  # (1, H, 1, C, 1), (1, H, N, 1, 1)
        to_end = g * (real[:, None] - steps).clamp(min=0)[..., None]  # (1, H, N, C, 1): steps left in the chunk
    else:
        g = torch.nn.functional.pad(log_decay.expand(batch, -1, length, -1), (0, 0, 0, n * size - length))
        b = g.double().view(batch, g.shape[1], n, size, 1).cumsum(dim=3)  # (B, H, N, C, 1)
        total = b[:, :, :, -1:]
        to_end = total - b
    mask = decay_mask(b, causal)[..., 0]  # (B|1, H, N|1, C, C)
    return mask, b.float().exp(), to_end.float().exp(), total.float().exp()


class KeyDimDecays(torch.autograd.Function):
    """`(Q̃, K̂, K̃, γ, b) = KeyDimDecays.apply(Q, K, g)` on chunks (B, H, N, C, Dk), all contiguous float32.

    Returns Q̃ = Q ⊙ e^b, K̂ = K ⊙ min(e^{−b}, e^{SAFE_EXPONENT}) (intra-chunk keys), K̃ = K ⊙ e^{b_C − b} (state
    keys), γ = e^{b_C} (B, H, N, 1, Dk) and the float64 prefix sums b, for the explicit products of unsafe chunks.
    """

    @staticmethod
    @autocast_off
    def forward(ctx, query, key, log_decay):
        ctx.set_materialize_grads(False)
        b = log_decay.double().cumsum(dim=3)  # (B, H, N, C, Dk)
        total = b[:, :, :, -1:]  # (B, H, N, 1, Dk)
        query_scale = b.float().exp_()  # e^{b_i} ≤ 1
        intra_scale = query_scale.reciprocal().clamp_(max=math.exp(SAFE_EXPONENT))  # e^{−b_j}, clamped
        state_scale = (total - b).float().exp_()  # e^{b_C − b_j} ≤ 1
        decay = total.float().exp_()
        ctx.clamped = (b < -SAFE_EXPONENT) if bool((total < -SAFE_EXPONENT).any()) else None
        ctx.save_for_backward(query, key, query_scale, intra_scale, state_scale, decay)
        return query * query_scale, key * intra_scale, key * state_scale, decay, b

    @staticmethod
    @autocast_off
    def backward(ctx, grad_decayed_query, grad_intra_key, grad_state_key, grad_decay, grad_b):
        query, key, query_scale, intra_scale, state_scale, decay = ctx.saved_tensors
        grad_query = grad_key = None
        grad_log = torch.zeros_like(query)  # ∂L/∂b, float32
        if grad_decayed_query is not None:
            grad_query = grad_decayed_query * query_scale
            grad_log.addcmul_(query, grad_query)
        if grad_intra_key is not None:
            grad_key = grad_intra_key * intra_scale
            through = grad_key if ctx.clamped is None else grad_key.masked_fill(ctx.clamped, 0.0)  # clamp: no ∂/∂b
            grad_log.addcmul_(key, through, value=-1.0)
        if grad_state_key is not None:
            grad_state = grad_state_key * state_scale
            grad_log.addcmul_(key, grad_state, value=-1.0)
            grad_log[:, :, :, -1:] += (key * grad_state).sum(dim=3, keepdim=True)  # via e^{b_C − b_j}
            grad_key = grad_state if grad_key is None else grad_key.add_(grad_state)
        if grad_decay is not None:
            grad_log[:, :, :, -1:] += grad_decay * decay
        if grad_b is not None:
            grad_log += grad_b.float()
        prefix = grad_log.cumsum(dim=3)
        grad_log_decay = (prefix[:, :, :, -1:] - prefix).add_(grad_log)  # Σ_{i ≥ s} ∂L/∂b_i
        return grad_query, grad_key, grad_log_decay


def key_dim_scores(query, key, decayed_query, intra_key, b, causal):
    """Intra-chunk scores A_ij = Σ_d q_id k_jd exp(b_id − b_jd), j ≤ i: (B, H, N, C, C).

    Safe chunks take one factored matmul; chunks that decay beyond the bound go through `tiled_scores`.

    Args:
        query, key: (B, H, N, C, Dk) Q and K; decayed_query, intra_key: Q̃ and K̂ from `KeyDimDecays`.
        b: (B, H, N, C, Dk) float64 prefix sums of the log decays inside each chunk.
        causal: (C, C) boolean, j ≤ i.
    """
    scores = torch.tril(decayed_query @ intra_key.transpose(-1, -2))  # exact wherever the chunk is safe
    unsafe = (b[..., -1, :] < -SAFE_EXPONENT).any(-1)  # (B, H, N): chunks that decay beyond the bound
    if bool(unsafe.any()):
        idx = unsafe.nonzero(as_tuple=True)
        scores = scores.index_put(idx, tiled_scores(query[idx], key[idx], b[idx]))
    return scores


def tiled_scores(query, key, b, size: int = SUBCHUNK_SIZE):
    """Intra-chunk scores of chunks that decay too hard to factor at once, tiled into sub-chunks of `size`.

    With r_I the prefix sum just before sub-chunk I (0 before the first) and l_i = b_i − r_I the decay inside it,
    exp(b_i − b_j) for i in I and j in an earlier sub-chunk J splits into three factors ≤ 1 (flash-linear-attention's
    two-level tiling):

        exp(l_i) · exp(r_I − r_{J+1}) · exp(l_{J,end} − l_j)      (query inside I, between sub-chunks, key to J's end)

    so every row of sub-chunk I is one matmul against the keys of the whole chunk, each sub-chunk's keys scaled by a
    (Dk,) decay between sub-chunks. A diagonal block J = I uses the same form with the middle factor
    exp(−l_{I,end}) ≤ e^SAFE_EXPONENT (clamped): exact unless the sub-chunk itself decays beyond the bound; those
    blocks are tiled again, `SUBCHUNK_FACTOR` times finer, and only blocks of fewer than 2·`SUBCHUNK_FACTOR`
    positions are formed as explicit (c, c, Dk) products. A learned GLA forgets fast enough that most 64-step
    chunks are unsafe but almost no 16-step sub-chunk is. Exponents are differences of float64 prefix sums taken
    before casting, so no factor loses precision to cancellation.

    Args:
        query, key: (M, C, Dk) float32 Q and K of M chunks.
        b: (M, C, Dk) float64 prefix sums of the log decays inside each chunk.
        size: sub-chunk length c.

    Returns:
        (M, C, C) scores, zero above the diagonal.
    """
    chunks, length, dk = query.shape
    n = -(-length // size)
    if n * size > length:  # pad to whole sub-chunks: zero q and k, no further decay
        query, key = (F.pad(x, (0, 0, 0, n * size - length)) for x in (query, key))
        b = torch.cat([b, b[:, -1:].expand(-1, n * size - length, -1)], dim=1)
    q, k, b = (x.reshape(chunks, n, size, dk) for x in (query, key, b))  # (M, S, c, Dk)
    ends = b[:, :, -1]  # (M, S, Dk): b at each sub-chunk's end, r_{I+1}
    ref = F.pad(ends[:, :-1], (0, 0, 1, 0))  # (M, S, Dk): r_I
    q_scaled = q * (b - ref[:, :, None]).float().exp()  # (M, S, c, Dk): e^{l_i} ≤ 1
    k_to_end = k * (ends[:, :, None] - b).float().exp()  # (M, S, c, Dk): e^{l_end − l_j} ≤ 1
    later = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1)[..., None]  # (S_I, S_J, 1): J > I
    between = (ref[:, :, None] - ends[:, None]).masked_fill(later, float("-inf"))  # (M, S_I, S_J, Dk): r_I − r_{J+1}
    between = between.clamp(max=SAFE_EXPONENT).float().exp()  # ≤ 1 for J < I; e^{−l_{I,end}} on the diagonal
    keys = (k_to_end[:, None] * between[:, :, :, None]).reshape(chunks, n, n * size, dk)  # (M, S_I, C, Dk)
    rows = q_scaled @ keys.transpose(-1, -2)  # (M, S_I, c, C): every row of sub-chunk I against the whole chunk
    unsafe = (ends - ref < -SAFE_EXPONENT).any(-1)  # (M, S): sub-chunks that decay beyond the bound
    if bool(unsafe.any()):
        m, s = unsafe.nonzero(as_tuple=True)
        inside = b[m, s] - ref[m, s][:, None]  # (m, c, Dk): prefix sums from the sub-chunk's start
        if size >= 2 * SUBCHUNK_FACTOR:  # tile the sub-chunk again
            diagonal = tiled_scores(q[m, s], k[m, s], inside, size // SUBCHUNK_FACTOR)
        else:
            diagonal = explicit_scores(q[m, s], k[m, s], inside)  # (m, c, c)
        rows.view(chunks, n, size, n, size)[m, s, :, s] = diagonal
    return torch.tril(rows.reshape(chunks, n * size, n * size)[:, :length, :length])
