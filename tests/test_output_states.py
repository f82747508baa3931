"""`output_states`: every recurrent layer's state after each requested position equals the state the decode cache
holds there when the same tokens are fed one at a time (the segments of `output_states` run the chunked forms)."""

import pytest
import torch
from transformers import AutoModelForCausalLM

import hf_icl
from hf_icl.architectures import ARCHITECTURES
from hf_icl.modeling.states import state_size_report

RECURRENT = [name for name in hf_icl.list_architectures() if ARCHITECTURES[name].recurrent_decode]


def left_padded_batch():
    input_ids = torch.tensor([[0, 0, 0, 3, 5, 7, 19, 2, 4], [1, 2, 3, 4, 19, 5, 6, 7, 8]])
    attention_mask = (torch.arange(9)[None] >= torch.tensor([[3], [0]])).long()
    return input_ids, attention_mask


def decoded_states(model, input_ids, attention_mask):
    """Per position, per layer: the cache's tensors after feeding tokens 0 … t one at a time."""
    cache, snapshots = None, []
    with torch.no_grad():
        for t in range(input_ids.shape[1]):
            cache = model(input_ids[:, t : t + 1], attention_mask=attention_mask[:, : t + 1], cache=cache,
                          use_cache=True).cache  # fmt: skip
            snapshots.append([dict(state.tensors) for state in cache.layers])
    return snapshots


@pytest.mark.parametrize("arch", RECURRENT)
@pytest.mark.parametrize("positions", [True, [3, 6, -1]])
def test_output_states_equal_the_decode_cache(arch, positions):
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(hf_icl.config_for(arch, "tiny", vocab_size=20)).eval()
    input_ids, attention_mask = left_padded_batch()
    with torch.no_grad():
        out = model(input_ids, attention_mask=attention_mask, output_states=positions)
        plain = model(input_ids, attention_mask=attention_mask)
    torch.testing.assert_close(out.logits, plain.logits, atol=0, rtol=0)  # states ride along, logits unchanged
    expected_positions = list(range(9)) if positions is True else [3, 6, 8]
    assert out.state_positions == expected_positions
    reference = decoded_states(model, input_ids, attention_mask)
    assert len(out.states) == len(model.model.layers)
    for i, (layer, states) in enumerate(zip(model.model.layers, out.states)):
        assert states is not None and set(states) == set(reference[0][i]), (i, type(layer.mixer).__name__)
        for name, tensor in states.items():
            assert tensor.shape[:2] == (2, len(expected_positions))
            for p, position in enumerate(expected_positions):
                torch.testing.assert_close(tensor[:, p], reference[position][i][name], atol=1e-5, rtol=1e-5)


def test_attention_layers_report_no_state_and_positions_are_checked():
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(hf_icl.config_for("mambaformer", "tiny", vocab_size=20)).eval()
    out = model(torch.randint(1, 20, (1, 6)), output_states=[2])
    kinds = [type(layer.mixer).recurrent for layer in model.model.layers]
    assert [s is not None for s in out.states] == kinds and not all(kinds)
    with pytest.raises(ValueError, match="output_states position 6"):
        model(torch.randint(1, 20, (1, 6)), output_states=[6])


@pytest.mark.parametrize("arch", ["transformer", "gla", "mamba2", "based", "hyena"])
def test_state_size_is_counted_the_zoology_way(arch):
    """A recurrent model's fixed state (its declared size at any length); attention's KV cache at length T."""
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(hf_icl.config_for(arch, "tiny", vocab_size=20)).eval()
    short, long = (state_size_report(model, length) for length in (64, 256))
    declared = model.model.state_size()
    assert short["fixed"] == long["fixed"] == (declared is not None)
    if declared is not None:
        assert short["bytes_per_sequence"] == long["bytes_per_sequence"] == declared
    else:
        assert long["bytes_per_sequence"] > short["bytes_per_sequence"]
    if arch == "transformer":  # L × (keys, values) × T × d × 4 bytes
        assert long["bytes_per_sequence"] == 2 * 2 * 256 * 64 * 4
