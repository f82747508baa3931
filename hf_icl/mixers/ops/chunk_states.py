"""The chunked linear recurrence's matmuls, as one autograd function with a hand-written backward.

Per chunk n of C positions (paper 1, Appendix A.4–A.6; GLA's chunk-level form), with b the prefix sums of the log
decays inside the chunk (`linear_recurrence.chunked_linear_attention` prepares them):

    O_n     = A_n V_n + Q̃_n S_n            Q̃_n = Q_n ⊙ exp(b),   A_n = (Q_n K_nᵀ) ⊙ M_n (or given)
    S_{n+1} = diag(γ_n) S_n + K̃_nᵀ V_n     K̃_n = K_n ⊙ exp(b_C − b),   γ_n = exp(b_C) per key dim

where M_n is the causal mask with the decays exp(b_i − b_j) (one decay per head) or A_n comes ready-made (GLA's
per-key-dim decays, which do not factor into a (C, C) mask). Backward, with G_n = ∂L/∂S_n (G_N given, or 0):

    G_n = diag(γ_n) G_{n+1} + Q̃_nᵀ dO_n,   dQ̃_n = dO_n S_nᵀ,   dA_n = dO_n V_nᵀ,   dγ_n = Σ_v S_n ⊙ G_{n+1}
    dV_n = A_nᵀ dO_n + K̃_n G_{n+1},         dK̃_n = V_n G_{n+1}ᵀ
    dQ_n = dQ̃_n ⊙ exp(b) + (dA_n ⊙ M_n) K_n,   dK_n = dK̃_n ⊙ exp(b_C − b) + (dA_n ⊙ M_n)ᵀ Q_n   (masked form)

Everything but the two state hand-overs is a batched matmul over all chunks at once, accumulating in place
(`baddbmm_`); the hand-overs loop over chunks (never over time steps), writing each state straight into its slot.
Autograd through the same ops kept extra copies (cumsum along chunks, transposes, masks, summed gradients) that cost
about as much as the matmuls at C = 64.
"""

from __future__ import annotations

import torch

from .precision import autocast_off


def _rows(t):
    """(..., R, K) → (M, R, K) for `torch.bmm`; a view of the contiguous tensors used here."""
    return t.reshape(-1, *t.shape[-2:])


def _scaled(x, scale):
    return x if scale is None else x * scale


class ChunkStates(torch.autograd.Function):
    """`(O, S_N) = ChunkStates.apply(Q, K, V, A, M, exp(b), exp(b_C − b), γ, S_0)`.

    Args (forward):
        query, key: (B, H, N, C, Dk), contiguous: Q and K (masked form) or Q̃ and K̃ (given scores).
        value: (B, H, N, C, Dv), contiguous.
        scores: (B, H, N, C, C) intra-chunk scores A, or `None` to form (Q Kᵀ) ⊙ M.
        mask: M broadcastable to (B, H, N, C, C) (causal, decays applied), constant; `None` with given scores.
        query_scale, key_scale: exp(b) and exp(b_C − b) broadcastable to (B, H, N, C, 1), constant, or `None`.
        decay: γ broadcastable to (B, H, N, Dk, 1), or `None` (no decay).
        initial_state: (B, H, Dk, Dv) S_0, or `None` for zeros.

    Returns:
        O (B, H, N, C, Dv) and S_N (B, H, Dk, Dv).
    """

    @staticmethod
    @autocast_off
    def forward(ctx, query, key, value, scores, mask, query_scale, key_scale, decay, initial_state):
        if any(ctx.needs_input_grad[4:7]):
            raise ValueError("ChunkStates takes a constant mask and scales; give the scores for decays with gradients")
        batch, heads, chunks, size, dk = query.shape
        dv = value.shape[-1]
        decayed_query, decayed_key = _scaled(query, query_scale), _scaled(key, key_scale)  # Q̃, K̃
        if scores is None:
            scores = torch.bmm(_rows(query), _rows(key).transpose(1, 2)).view(batch, heads, chunks, size, size)
            scores.mul_(mask)  # A = (Q Kᵀ) ⊙ M
        updates = torch.bmm(_rows(decayed_key).transpose(1, 2), _rows(value)).view(batch, heads, chunks, dk, dv)
        states = query.new_empty(batch, heads, chunks, dk, dv)  # S_0 .. S_{N−1}
        ctx.decay_shape = None if decay is None else decay.shape
        if decay is not None:
            decay = decay.expand(batch, heads, chunks, dk, 1)
        states[:, :, 0] = 0.0 if initial_state is None else initial_state
        for n in range(chunks):
            out = states[:, :, n + 1] if n + 1 < chunks else None
            if decay is None:
                final = torch.add(updates[:, :, n], states[:, :, n], out=out)
            else:
                final = torch.addcmul(updates[:, :, n], decay[:, :, n], states[:, :, n], out=out)
        out = torch.bmm(_rows(decayed_query), _rows(states)).baddbmm_(_rows(scores), _rows(value))  # Q̃ S + A V
        ctx.save_for_backward(query, key, value, scores, mask, query_scale, key_scale, decay, states)
        ctx.masked, ctx.has_initial_state = mask is not None, initial_state is not None
        return out.view(*value.shape), final

    @staticmethod
    @autocast_off
    def backward(ctx, grad_out, grad_final):
        query, key, value, scores, mask, query_scale, key_scale, decay, states = ctx.saved_tensors
        batch, heads, chunks, size, dk = query.shape
        dv = value.shape[-1]
        grad_out = _rows(grad_out.contiguous())  # (B·H·N, C, Dv)
        decayed_query = _rows(_scaled(query, query_scale))
        carried = torch.bmm(decayed_query.transpose(1, 2), grad_out).view(batch, heads, chunks, dk, dv)  # Q̃ᵀ dO
        grad_next = torch.empty_like(states)  # G_{n+1}: ∂L/∂(state leaving chunk n)
        grad_next[:, :, -1] = 0.0 if grad_final is None else grad_final
        for n in range(chunks - 1, -1, -1):
            out = grad_next[:, :, n - 1] if n > 0 else None
            if decay is None:
                grad_initial = torch.add(carried[:, :, n], grad_next[:, :, n], out=out)
            else:
                grad_initial = torch.addcmul(carried[:, :, n], decay[:, :, n], grad_next[:, :, n], out=out)
        grads = [None] * 9
        need_query, need_key, need_value, need_scores = ctx.needs_input_grad[:4]
        grad_scores = None
        if need_scores or (ctx.masked and (need_query or need_key)):
            grad_scores = torch.bmm(grad_out, _rows(value).transpose(1, 2)).view(*scores.shape)  # dO Vᵀ
            if ctx.masked:
                grad_scores.mul_(mask)  # dA ⊙ M
            else:
                grads[3] = grad_scores
        if need_query:
            grad_query = torch.bmm(grad_out, _rows(states).transpose(1, 2)).view(*query.shape)  # dQ̃ = dO Sᵀ
            if query_scale is not None:
                grad_query.mul_(query_scale)
            if ctx.masked:
                _rows(grad_query).baddbmm_(_rows(grad_scores), _rows(key))  # + (dA ⊙ M) K
            grads[0] = grad_query
        if need_key:
            grad_key = torch.bmm(_rows(value), _rows(grad_next).transpose(1, 2)).view(*key.shape)  # dK̃ = V Gᵀ
            if key_scale is not None:
                grad_key.mul_(key_scale)
            if ctx.masked:
                _rows(grad_key).baddbmm_(_rows(grad_scores).transpose(1, 2), _rows(query))  # + (dA ⊙ M)ᵀ Q
            grads[1] = grad_key
        if need_value:
            grad_value = torch.bmm(_rows(scores).transpose(1, 2), grad_out)  # Aᵀ dO
            grads[2] = grad_value.baddbmm_(_rows(_scaled(key, key_scale)), _rows(grad_next)).view(*value.shape)
        if ctx.needs_input_grad[7]:
            grads[7] = (states * grad_next).sum(-1, keepdim=True).sum_to_size(ctx.decay_shape)  # (B, H, N, Dk, 1)
        if ctx.needs_input_grad[8] and ctx.has_initial_state:
            grads[8] = grad_initial
        return tuple(grads)
