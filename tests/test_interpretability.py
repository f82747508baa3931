"""nnsight on hf_icl models, for every registered architecture: a traced block output is the model's own hidden state,
and an nnsight edit (a block's mixer output zeroed) changes the logits exactly as the same edit made by hand with a
forward hook. docs/interpretability.md shows the same calls, and how to reach a mixer's internals.
"""

from __future__ import annotations

import nnsight  # in the dev extra: a missing package fails here, it does not skip
import pytest
import torch
from nnsight import NNsight
from transformers import AutoModelForCausalLM

import hf_icl
from hf_icl.analysis.transformer_lens_bridge import transformer_lens_bridge

ARCHS = hf_icl.list_architectures()
INPUT = torch.tensor([[3, 5, 7, 19, 2, 4, 4, 1, 0, 6, 5, 3]])  # (1, 12)


def tiny_lm(arch: str, seed: int = 0):
    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(hf_icl.config_for(arch, "tiny", vocab_size=20)).eval()


def first(value):
    """A block or mixer returns a tensor, or a tuple whose first item is the token stream."""
    return value[0] if isinstance(value, tuple) else value


@pytest.mark.parametrize("arch", ARCHS)
def test_a_traced_block_output_is_the_hidden_state(arch):
    model = tiny_lm(arch)
    with torch.no_grad():
        reference = model(INPUT, output_hidden_states=True)
    traced = NNsight(model)
    layers = traced.model.layers
    with torch.no_grad(), traced.trace(INPUT):
        blocks = nnsight.save([first(layers[i].output) for i in range(len(layers))])
        logits = traced.output.logits.save()
    torch.testing.assert_close(logits, reference.logits, rtol=0, atol=0)
    # Each block's first application is hidden state i + 1 (RegularGPT applies its blocks again at every depth,
    # in order; hidden state 0 is the embedding).
    for i, block in enumerate(blocks):
        torch.testing.assert_close(block, reference.hidden_states[i + 1], rtol=0, atol=0)


def zero_first_call(module) -> torch.utils.hooks.RemovableHandle:
    """The hand-made edit: the module's first output (per forward) replaced by zeros, as nnsight's edit does."""
    calls = []

    def hook(_module, _inputs, output):
        calls.append(1)
        if len(calls) > 1:
            return output
        if isinstance(output, tuple):
            return (torch.zeros_like(output[0]), *output[1:])
        return torch.zeros_like(output)

    return module.register_forward_hook(hook)


@pytest.mark.parametrize("arch", ARCHS)
def test_zeroing_a_mixer_output_with_nnsight_equals_the_hand_edit(arch):
    model = tiny_lm(arch)
    layer = len(model.model.layers) - 1
    with torch.no_grad():
        clean = model(INPUT).logits
        handle = zero_first_call(model.model.layers[layer].mixer)
        try:
            by_hand = model(INPUT).logits
        finally:
            handle.remove()
    traced = NNsight(model)
    with torch.no_grad(), traced.trace(INPUT):
        first(traced.model.layers[layer].mixer.output)[:] = 0
        edited = traced.output.logits.save()
    assert not torch.allclose(by_hand, clean), "zeroing the mixer must change the logits"
    torch.testing.assert_close(edited, by_hand, rtol=0, atol=0)
    with torch.no_grad():
        torch.testing.assert_close(model(INPUT).logits, clean, rtol=0, atol=0)  # the trace left the model as it was


def test_mixer_internals_through_nnsight_source():
    """What docs/interpretability.md shows: the attention mixer's queries and keys (`.source`), from which its
    softmax map is exactly the one `output_attentions=True` returns; GLA's data-dependent decay gate; and the
    recurrent state after a position through `output_states`."""
    model = tiny_lm("transformer")
    assert model.config.position_embedding == "learned"  # queries and keys are used as split_heads returns them
    with torch.no_grad():
        maps = model(INPUT, output_attentions=True).attentions
    traced = NNsight(model)
    with torch.no_grad(), traced.trace(INPUT):
        query, key, value = traced.model.layers[0].mixer.source.self_split_heads_0.output
        query, key = nnsight.save(query), nnsight.save(key)  # each (B, H, T, D)
    scores = query @ key.transpose(-1, -2) / query.shape[-1] ** 0.5  # (B, H, T, T)
    causal = torch.ones(INPUT.shape[1], INPUT.shape[1], dtype=torch.bool).tril()
    torch.testing.assert_close(scores.masked_fill(~causal, float("-inf")).softmax(-1), maps[0])

    gla = tiny_lm("gla")
    traced = NNsight(gla)
    with torch.no_grad(), traced.trace(INPUT):
        log_decay = traced.model.layers[0].mixer.source.self_log_decay_0.output.save()  # (B, H, T, Dk): log α
    assert log_decay.shape[:3] == (1, gla.config.num_attention_heads, INPUT.shape[1]) and (log_decay <= 0).all()
    with torch.no_grad():
        states = gla(INPUT, output_states=[5]).states  # per layer: {name: (B, 1, *shape)}, after position 5
    assert all(state is not None and all(t.shape[:2] == (1, 1) for t in state.values()) for state in states)


def zero_every_call(module) -> torch.utils.hooks.RemovableHandle:
    """The hand-made edit TransformerLens's hook makes: the module's output replaced by zeros at every call."""

    def hook(_module, _inputs, output):
        return (torch.zeros_like(output[0]), *output[1:]) if isinstance(output, tuple) else torch.zeros_like(output)

    return module.register_forward_hook(hook)


@pytest.mark.parametrize("arch", ARCHS)
def test_transformer_lens_bridge_caches_the_residual_stream_and_patches_a_mixer(arch):
    model = tiny_lm(arch)
    with torch.no_grad():
        reference = model(INPUT, output_hidden_states=True)
        last = len(model.model.layers) - 1
        handle = zero_every_call(model.model.layers[last].mixer)
        try:
            by_hand = model(INPUT).logits
        finally:
            handle.remove()
    bridge = transformer_lens_bridge(model, hf_icl.load_tokenizer("regbench"), device="cpu")
    with torch.no_grad():
        logits, cache = bridge.run_with_cache(INPUT)
        patched = bridge.run_with_hooks(
            INPUT, fwd_hooks=[(f"blocks.{last}.mixer.hook_out", lambda value, hook: torch.zeros_like(value))]
        )
    tolerance = {"rtol": 1e-5, "atol": 1e-6}  # the bridge runs attention eagerly: float rounding, nothing more
    torch.testing.assert_close(logits, reference.logits, **tolerance)
    # The cache holds each block's last application: the last pass over the blocks (the only one, except for
    # RegularGPT's depth levels), whose input is the hidden state before its L outputs.
    for i in range(last + 1):
        applied = len(reference.hidden_states) - (last + 1) + i  # index of block i's last output
        torch.testing.assert_close(
            cache[f"blocks.{i}.hook_resid_pre"], reference.hidden_states[applied - 1], **tolerance
        )
        torch.testing.assert_close(cache[f"blocks.{i}.hook_resid_post"], reference.hidden_states[applied], **tolerance)
    torch.testing.assert_close(patched, by_hand, **tolerance)
    assert not torch.allclose(patched, logits)
