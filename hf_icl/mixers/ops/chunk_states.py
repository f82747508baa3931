"""The inter-chunk half of the chunked linear recurrence, as one autograd function with a hand-written backward.

Per chunk n of C positions (paper 1, Appendix A.4–A.6; GLA's chunk-level form), with the decays already folded into
the queries and keys by the caller (`linear_recurrence.chunked_linear_attention`):

    O_n     = A_n V_n + Q̃_n S_n                       A_n: (C, C) intra-chunk scores, Q̃_n = Q_n ⊙ exp(b)
    S_{n+1} = diag(γ_n) S_n + K̃_nᵀ V_n                K̃_n = K_n ⊙ exp(b_C − b), γ_n = exp(b_C) per key dim

Backward, with G_n = ∂L/∂S_n (G_N given, or 0) and dO_n:

    G_n = diag(γ_n) G_{n+1} + Q̃_nᵀ dO_n,   dQ̃_n = dO_n S_nᵀ,   dA_n = dO_n V_nᵀ
    dV_n = A_nᵀ dO_n + K̃_n G_{n+1},         dK̃_n = V_n G_{n+1}ᵀ,  dγ_n = Σ_v S_n ⊙ G_{n+1}

Everything but the two state hand-overs is a batched matmul over all chunks at once; the hand-overs loop over
chunks (never over time steps), writing each state straight into its slot. Autograd through the same ops keeps
extra copies (cumsum along chunks, transposes, the summed gradients) that cost as much as the matmuls at C = 64.
"""

from __future__ import annotations

import torch


def _rows(t):
    """(..., R, K) → (M, R, K) for `torch.bmm`; a view of the contiguous tensors used here."""
    return t.reshape(-1, *t.shape[-2:])


class ChunkStates(torch.autograd.Function):
    """`(O, S_N) = ChunkStates.apply(A, Q̃, K̃, V, γ, S_0)`.

    Args (forward):
        scores: (B, H, N, C, C) intra-chunk scores A (causal mask and decays applied).
        query, key: (B, H, N, C, Dk) Q̃ and K̃, contiguous.
        value: (B, H, N, C, Dv), contiguous.
        decay: γ broadcastable to (B, H, N, Dk, 1), or `None` (no decay).
        initial_state: (B, H, Dk, Dv) S_0, or `None` for zeros.

    Returns:
        O (B, H, N, C, Dv) and S_N (B, H, Dk, Dv).
    """

    @staticmethod
    def forward(ctx, scores, query, key, value, decay, initial_state):
        batch, heads, chunks, _, dk = query.shape
        dv = value.shape[-1]
        updates = torch.bmm(_rows(key).transpose(1, 2), _rows(value)).view(batch, heads, chunks, dk, dv)  # K̃ᵀV
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
        out = torch.bmm(_rows(query), _rows(states)).baddbmm_(_rows(scores), _rows(value))  # Q̃ S + A V
        ctx.save_for_backward(scores, query, key, value, decay, states)
        ctx.has_initial_state = initial_state is not None
        return out.view(*value.shape), final

    @staticmethod
    def backward(ctx, grad_out, grad_final):
        scores, query, key, value, decay, states = ctx.saved_tensors
        batch, heads, chunks, size, dk = query.shape
        dv = value.shape[-1]
        grad_out = _rows(grad_out.contiguous())  # (B·H·N, C, Dv)
        carried = torch.bmm(_rows(query).transpose(1, 2), grad_out).view(batch, heads, chunks, dk, dv)  # Q̃ᵀ dO
        grad_next = torch.empty_like(states)  # G_{n+1}: ∂L/∂(state leaving chunk n)
        grad_next[:, :, -1] = 0.0 if grad_final is None else grad_final
        for n in range(chunks - 1, -1, -1):
            out = grad_next[:, :, n - 1] if n > 0 else None
            if decay is None:
                grad_initial = torch.add(carried[:, :, n], grad_next[:, :, n], out=out)
            else:
                grad_initial = torch.addcmul(carried[:, :, n], decay[:, :, n], grad_next[:, :, n], out=out)
        grads = [None] * 6
        if ctx.needs_input_grad[0]:
            grads[0] = torch.bmm(grad_out, _rows(value).transpose(1, 2)).view(*scores.shape)  # dO Vᵀ
        if ctx.needs_input_grad[1]:
            grads[1] = torch.bmm(grad_out, _rows(states).transpose(1, 2)).view(*query.shape)  # dO Sᵀ
        if ctx.needs_input_grad[2]:
            grads[2] = torch.bmm(_rows(value), _rows(grad_next).transpose(1, 2)).view(*key.shape)  # V Gᵀ
        if ctx.needs_input_grad[3]:
            grad_value = torch.bmm(_rows(scores).transpose(1, 2), grad_out)  # Aᵀ dO
            grads[3] = grad_value.baddbmm_(_rows(key), _rows(grad_next)).view(*value.shape)  # + K̃ G
        if ctx.needs_input_grad[4]:
            grads[4] = (states * grad_next).sum(-1, keepdim=True).sum_to_size(ctx.decay_shape)  # (B, H, N, Dk, 1)
        if ctx.needs_input_grad[5] and ctx.has_initial_state:
            grads[5] = grad_initial
        return tuple(grads)
