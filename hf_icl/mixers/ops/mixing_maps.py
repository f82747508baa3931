"""Exact token-mixing maps of the mixers whose output is linear in their values (`output_attentions=True`).

Such a mixer computes z = M v per head: linear attention, RetNet, GLA, DeltaNet, Gated DeltaNet (a causal matrix of
data-dependent entries), Mamba and Mamba-2 (the SSD matrix), S4 and H3 (Toeplitz kernels times gates), Hyena (a
product of Toeplitz and diagonal factors), RWKV-4 and RWKV-7. M is exact and computable: a mixer that declares
`mixing_maps = True` implements `mixing_map(hidden_states, mask) -> MixingMap`, its map M (B, H, T, T), the values
v (B, H, T, Dv) it mixes and its output z (B, H, T, Dv) before any per-position operation (norm, gate, output
projection), from the same code as its forward; `tests/test_mixing_maps.py` checks M v = z for every such mixer.
H is the mixer's own axis of independent maps: heads, or channels where every channel mixes on its own (S4,
Hyena, Mamba, RWKV-4). Decayed maps use differences of float64 prefix sums (every exponent ≤ 0) or the mixers'
own safe chunked forms, so nothing overflows. The LSTM has no such map: its state passes through σ and tanh, so
its output is not linear in any per-position values (its layers report `None`).

`report_mixing_map` is the one call a mixer's forward makes: with `recorder.output_attentions` it reports the
rows of the current positions. With a cache (generation), the map of a new token needs the coefficients of every
earlier position, which an O(1) state does not keep, so while maps are asked for the mixer's inputs are kept in
the cache (`map_history`) and the map is recomputed over the whole sequence: (B, H, T_new, T_seen) per call, like
softmax attention's.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .padding import token_mask


@dataclass
class MixingMap:
    """A mixer's exact token mixing: `output = maps @ values`.

    Args:
        maps: (B, H, T, T), zero above the diagonal and in the columns of padded positions.
        values: (B, H, T, Dv), what the map mixes.
        output: (B, H, T, Dv), the mixer's output before any per-position operation.
    """

    maps: torch.Tensor
    values: torch.Tensor
    output: torch.Tensor


def causal_key_mask(mask, length: int, device) -> torch.Tensor:
    """(B|1, 1, T, T) float: 1 where key j ≤ query t and j is a real token."""
    allowed = torch.ones(length, length, device=device).tril()[None, None]
    if mask is not None:
        allowed = allowed * mask[:, None, None, :].to(allowed.dtype)
    return allowed


def report_mixing_map(mixer, hidden_states, attention_mask, cache, recorder, context=None) -> None:
    """Report `mixer`'s map rows for the positions of `hidden_states` (B, T, d) to `recorder`, if maps are asked.

    Args:
        mixer: a mixer with `mixing_map` and `layer_idx`.
        attention_mask: (B, S) over the whole sequence so far, or `None`.
        cache: the `ICLCache` or `None`; its layer state keeps `map_history` while maps are asked for.
        recorder: the block context's `ForwardRecorder`, or `None`.
        context: the block context, passed on as `mixing_map(..., context=...)` to a mixer whose values a block
            feature may transform (`value_transform_point`), so that its map is the map of the values it mixes.
    """
    if recorder is None or not recorder.output_attentions:
        return
    length = hidden_states.shape[1]
    history = hidden_states
    if cache is not None:
        state = cache.layer_state(mixer.layer_idx)
        past = state.get("map_history")
        if past is None and cache.get_seq_length() > 0:
            raise ValueError(
                "output_attentions=True on a cached continuation needs output_attentions=True from the first forward "
                "of that cache (the map of a new token reads every earlier position)"
            )
        history = hidden_states if past is None else torch.cat([past, hidden_states], dim=1)
        state.set("map_history", history.detach())
    extra = {"context": context} if getattr(mixer, "value_transform_point", False) else {}
    with torch.no_grad():
        mixing = mixer.mixing_map(history, token_mask(attention_mask, history.shape[1]), **extra)
    recorder.add_attention(mixing.maps[:, :, -length:])  # (B, H, T, S)
