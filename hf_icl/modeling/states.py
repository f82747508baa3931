"""Per-position recurrent states (`output_states=`): the state every recurrent layer holds after given positions.

The state after position p is, by definition, the cache state after the tokens 0 … p have been fed: so the model
runs the sequence through a fresh `ICLCache` in segments that end at the requested positions, and copies each
recurrent layer's `MixerState` after every segment. A segment longer than one token runs the mixer's chunked form
continued from the cached state, so asking for a few positions costs about one forward; asking for every position
is token-by-token decoding. `tests/test_output_states.py` checks the result against token-by-token decoding.
Layers whose cache grows with the sequence (attention's keys and values, Hyena's histories, n-gram tables) have no
fixed state and report `None`.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .cache import ICLCache


def requested_positions(output_states, length: int) -> list[int]:
    """Positions (0-based, ascending) from `output_states`: `True` for all, or a sequence of ints (negative counts
    from the end).

    Raises:
        ValueError: a position outside the sequence.
    """
    if output_states is True:
        return list(range(length))
    positions = []
    for p in output_states:
        if not isinstance(p, int) or isinstance(p, bool) or not -length <= p < length:
            raise ValueError(f"output_states position {p!r} is not allowed: expected an int in [{-length}, {length})")
        positions.append(p % length)
    return sorted(set(positions))


@torch.no_grad()
def per_position_states(model, input_ids, inputs_embeds, attention_mask, positions: Sequence[int]):
    """`(positions, states)`: for every layer, `{name: tensor (B, P, *shape)}` of its cache state after each position,
    or `None` when the layer's mixer is not recurrent.

    Args:
        model: an `ICLModel` (its forward with `use_cache=True`).
        input_ids, inputs_embeds: the sequence (one of them), (B, T) or (B, T, d).
        attention_mask: (B, T) or `None`.
        positions: ascending 0-based positions.
    """
    cache = ICLCache(model.config.num_hidden_layers)
    snapshots, start = [], 0
    for end in positions:
        segment = slice(start, end + 1)
        model(
            input_ids=None if input_ids is None else input_ids[:, segment],
            inputs_embeds=None if inputs_embeds is None else inputs_embeds[:, segment],
            attention_mask=None if attention_mask is None else attention_mask[:, : end + 1],
            cache=cache,
            use_cache=True,
        )
        snapshots.append([dict(state.tensors) for state in cache.layers])
        start = end + 1
    states = []
    for i, layer in enumerate(model.layers):
        if not getattr(getattr(layer, "mixer", None), "recurrent", False):
            states.append(None)
            continue
        names = snapshots[0][i].keys()
        states.append({name: torch.stack([snap[i][name] for snap in snapshots], dim=1) for name in names})
    return positions, tuple(states)


STATE_SIZE_LENGTH = 512  # T at which a growing cache (attention's KV, Hyena's histories) is counted


@torch.no_grad()
def state_size_report(model, length: int = STATE_SIZE_LENGTH) -> dict:
    """Bytes of state per sequence the zoology way: a recurrent model's fixed state, an attention model's KV cache
    (and any other growing cache) after `length` tokens, measured from one prefill of that length through a cache.

    Args:
        model: any hf_icl model (a causal LM, a regression model or a backbone).
        length: T for the growing caches.

    Returns:
        `{"bytes_per_sequence": int, "length": T, "fixed": bool}`; `fixed` when every layer's state has a declared
        size (it is then the same at any T).
    """
    backbone = getattr(model, getattr(model, "base_model_prefix", ""), model)
    parameter = next(backbone.parameters())
    if getattr(backbone, "embed_positions", None) is not None:  # learned positions end at max_position_embeddings
        length = min(length, backbone.config.max_position_embeddings)
    if backbone.embed_tokens is None:
        inputs = {"inputs_embeds": parameter.new_zeros(1, length, backbone.config.hidden_size)}
    else:
        inputs = {"input_ids": torch.ones(1, length, dtype=torch.long, device=parameter.device)}
    was_training = backbone.training
    backbone.eval()
    cache = backbone(**inputs, use_cache=True).cache
    backbone.train(was_training)
    fixed = backbone.state_size() is not None
    return {"bytes_per_sequence": cache.nbytes_per_sequence(), "length": length, "fixed": fixed}
