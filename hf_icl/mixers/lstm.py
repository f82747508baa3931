"""LSTM token mixer (Hochreiter & Schmidhuber, 1997; paper 1, Appendix A.7, eqs. 56–61).

    f_i = σ(W_f x_i + U_f h_{i−1}),  i_i = σ(W_i x_i + U_i h_{i−1}),  o_i = σ(W_o x_i + U_o h_{i−1})   (56–58)
    c̃_i = tanh(W_c x_i + U_c h_{i−1}),  c_i = f_i ⊙ c_{i−1} + i_i ⊙ c̃_i,  y_i = o_i ⊙ tanh(c_i)        (59–61)

One `torch.nn.LSTM` layer of hidden size d per skeleton layer, run by PyTorch's fused kernel. The `lstm`
architecture sets `ffn="none"`, so no feed-forward net sits between LSTM layers: "the input of layer l is directly
the output from layer l − 1" (P1 A.7) is read as "no FFN in between". The block keeps the skeleton's pre-norm and
residual, `h ← h + LSTM(norm(h))`, like every other architecture here; paper 1's reference code (berlino/seq_icl)
has both variants (its DFA LSTM config runs the LSTM in the pre-norm residual `lm_simple` block; `lm_simple_noffn`
has neither), and the residual keeps a deep stack trainable. A plain stack would need a skeleton option.

Padding: the state must not advance on padded tokens. In a padded batch each row's real tokens are gathered in
order (a stable sort of the mask), rows with the same number of real tokens run through the fused kernel together,
and the outputs are scattered back, so a left-padded row gives the outputs and final state of the same row
unpadded; unpadded input takes the plain fused path. Recurrent form: the cache keeps (h, c), 2·d floats per layer,
and each decoding step is one LSTM cell update.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import initialization as init

from .ops.padding import token_mask
from .registry import register_mixer


@register_mixer("lstm")
class LSTMMixer(nn.LSTM):
    """A single-layer `nn.LSTM` of width d that is also a token mixer, with (h, c) kept in the cache.

    It subclasses `nn.LSTM` (rather than holding one) so that its weights are its own parameters: transformers'
    init then visits this module itself and calls `reset_mixer_parameters` after its generic LSTM init.

    Args:
        config: an `ICLConfig` (uses hidden_size, use_bias).
        layer_idx (`int`): index of the layer, used to find this layer's state in the cache.
    """

    recurrent = True  # (h, c)
    returns_attention_maps = False

    def __init__(self, config, layer_idx: int):
        super().__init__(config.hidden_size, config.hidden_size, batch_first=True, bias=config.use_bias)
        self.layer_idx = layer_idx

    def state_size(self) -> int:
        return 2 * self.hidden_size * 4  # (h, c), fp32

    @torch.no_grad()
    def reset_mixer_parameters(self):
        """Keras-style init, as the reference code: Xavier W, orthogonal U, zero biases but a forget-gate bias of 1."""
        width = self.hidden_size
        init.xavier_uniform_(self.weight_ih_l0)
        init.orthogonal_(self.weight_hh_l0)
        if self.bias:
            forget = torch.zeros(4 * width)
            forget[width : 2 * width] = 1.0  # gate order in nn.LSTM: input, forget, cell, output
            init.copy_(self.bias_ih_l0, forget)
            init.zeros_(self.bias_hh_l0)

    def real_tokens_forward(self, x, mask, initial):
        """Run only each row's real tokens, in order: rows with the same count share one fused LSTM call.

        Padded positions output zeros, and a row's state advances over its real tokens only. (Packing rows of
        different lengths would also be exact, but its batch shrinks to one row on the last steps, where BLAS
        results depend on the weights' memory alignment, so a reloaded checkpoint would not match bit for bit.)
        """
        batch, length, width = x.shape
        lengths = mask.sum(1)  # (B,)
        order = torch.argsort((~mask).to(torch.int8), dim=1, stable=True)  # real positions first, in order
        index = order[..., None].expand(batch, length, width)
        packed = x.gather(1, index)  # (B, T, d): each row's real tokens first
        if initial is None:
            initial = (x.new_zeros(1, batch, width), x.new_zeros(1, batch, width))
        out = torch.zeros_like(x)
        h, c = initial[0].clone(), initial[1].clone()  # rows without a real token keep their state
        for count in lengths.unique().tolist():
            rows = (lengths == count).nonzero().squeeze(1)
            if count == 0:
                continue
            start = (initial[0][:, rows].contiguous(), initial[1][:, rows].contiguous())
            out[rows, :count], (h[:, rows], c[:, rows]) = super().forward(packed[rows, :count], start)
        return torch.zeros_like(out).scatter(1, index, out), (h, c)  # back to the original positions

    def forward(self, hidden_states, attention_mask=None, cache=None, input_ids=None, position_ids=None, **kwargs):
        state = cache.layer_state(self.layer_idx) if cache is not None else None
        initial = None
        if state is not None and state.get("h") is not None:
            initial = (state.get("h")[None].contiguous(), state.get("c")[None].contiguous())  # each (1, B, d)
        mask = token_mask(attention_mask, hidden_states.shape[1])
        if mask is None:
            out, (h, c) = super().forward(hidden_states, initial)  # (B, T, d)
        else:
            out, (h, c) = self.real_tokens_forward(hidden_states, mask, initial)
        if state is not None:
            state.set("h", h[0])  # (B, d)
            state.set("c", c[0])
        return out  # (B, T, d)
