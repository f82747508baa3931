"""Position schemes: hand-written Hard-ALiBi masks, ALiBi slopes, RoPE relativity, and extrapolation."""

import pytest
import torch
from transformers import AutoModelForCausalLM

import hf_icl
from hf_icl.mixers.attention import causal_padding_mask
from hf_icl.mixers.positions import alibi_slopes, relative_position_mask, rope_rotate


def test_hard_alibi_mask_hand_written():
    causal = causal_padding_mask(None, 4, 4, "cpu")  # (1, 1, 4, 4)
    mask = relative_position_mask("hard_alibi", causal, num_heads=3, num_masked_heads=2, dtype=torch.float32)
    expected = torch.tensor(
        [
            # head 0: distance 0 only (the token itself)
            [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]],
            # head 1: distances 0..1
            [[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]],
            # head 2: NoPE (plain causal)
            [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]],
        ],
        dtype=torch.bool,
    )
    assert torch.equal(mask[0], expected)


def test_hard_alibi_mask_during_decode():
    # One query at absolute index 3 over 4 cached keys, with the first key padding.
    padding = torch.tensor([[0, 1, 1, 1]])
    causal = causal_padding_mask(padding, 1, 4, "cpu")
    mask = relative_position_mask("hard_alibi", causal, num_heads=2, num_masked_heads=2, dtype=torch.float32)
    assert mask[0, :, 0].int().tolist() == [[0, 0, 0, 1], [0, 0, 1, 1]]


def test_alibi_slopes_and_bias():
    assert alibi_slopes(4).tolist() == [2**-2, 2**-4, 2**-6, 2**-8]
    assert alibi_slopes(8).tolist() == [2.0**-k for k in range(1, 9)]
    causal = causal_padding_mask(None, 3, 3, "cpu")
    bias = relative_position_mask("alibi", causal, num_heads=4, num_masked_heads=0, dtype=torch.float32)
    assert bias[0, 0, 2, :].tolist() == [-0.5, -0.25, 0.0]  # slope 1/4 at distances 2, 1, 0
    assert bias[0, 0, 0, 1] == torch.finfo(torch.float32).min


def test_rope_scores_depend_on_distance_only():
    torch.manual_seed(0)
    q, k = torch.randn(1, 2, 1, 8).expand(1, 2, 6, 8), torch.randn(1, 2, 1, 8).expand(1, 2, 6, 8)
    rq, rk = rope_rotate(q, k, query_offset=0, base=10000.0)
    scores = rq @ rk.transpose(-1, -2)  # (1, 2, 6, 6)
    for shift in range(1, 4):
        torch.testing.assert_close(scores[..., shift:, shift:], scores[..., :-shift, :-shift])
    rq5, rk5 = rope_rotate(q, k, query_offset=5, base=10000.0)
    torch.testing.assert_close(rq5 @ rk5.transpose(-1, -2), scores, atol=1e-5, rtol=0)


@pytest.mark.parametrize("scheme", ["rope", "alibi", "hard_alibi", "nope"])
def test_relative_schemes_run_at_four_times_the_training_length(scheme):
    config = hf_icl.config_for(
        "transformer",
        "tiny",
        vocab_size=20,
        position_embedding=scheme,
        num_masked_heads=1,
        max_position_embeddings=16,
    )
    model = AutoModelForCausalLM.from_config(config).eval()
    with torch.no_grad():
        logits = model(torch.randint(1, 20, (2, 64))).logits
    assert logits.shape == (2, 64, 20) and torch.isfinite(logits).all()
    assert model.model.embed_positions is None


def test_hard_alibi_needs_masked_heads():
    with pytest.raises(ValueError, match="hard_alibi' needs num_masked_heads"):
        hf_icl.config_for("transformer", "tiny", position_embedding="hard_alibi")
    with pytest.raises(ValueError, match="num_masked_heads=5 must be in"):
        hf_icl.config_for("transformer", "tiny", position_embedding="hard_alibi", num_masked_heads=5)
