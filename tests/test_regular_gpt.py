"""RegularGPT specifics: the sparse attention equals P2 eq. (1) densely, and depth follows ⌈log_C T⌉ at run time."""

import pytest
import torch
from transformers import AutoModelForCausalLM

import hf_icl
from hf_icl.architectures.regular_gpt.modeling_regular_gpt import regular_depth
from hf_icl.mixers.dilated_attention import SlidingDilatedAttention, dilated_key_indices


def equation_one_mask(length, chunk_size, depth, offset_bias):
    """M^(l)_mn = r_{(m−n)/C^l} if (m−n)/C^l ∈ {0..C−1} (integer), else −inf; per head (H, T, T)."""
    heads = offset_bias.shape[0]
    mask = torch.full((heads, length, length), float("-inf"))
    stride = chunk_size**depth
    for m in range(length):
        for n in range(m + 1):
            if (m - n) % stride == 0 and (m - n) // stride < chunk_size:
                mask[:, m, n] = offset_bias[:, (m - n) // stride]
    return mask


@pytest.mark.parametrize("chunk_size, depth, length", [(2, 0, 5), (2, 1, 8), (2, 2, 11), (3, 1, 10), (3, 2, 12)])
def test_sparse_attention_equals_dense_equation_one(chunk_size, depth, length):
    torch.manual_seed(0)
    config = hf_icl.config_for("regular_gpt", "tiny", dilated_attention_chunk_size=chunk_size)
    mixer = SlidingDilatedAttention(config, 0)
    with torch.no_grad():
        mixer.offset_bias.normal_()
    hidden = torch.randn(2, length, config.hidden_size)
    with torch.no_grad():
        sparse = mixer(hidden, dilation=chunk_size**depth)
        q, k, v = mixer.qkv_proj(hidden).view(2, length, 3, mixer.num_heads, -1).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-1, -2) * mixer.head_dim**-0.5
        scores = scores + equation_one_mask(length, chunk_size, depth, mixer.offset_bias)[None]
        dense = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(2, length, -1)
        dense = mixer.out_proj(dense)
    torch.testing.assert_close(sparse, dense, atol=1e-5, rtol=0)


def test_attention_pattern_is_sparse():
    index, exists = dilated_key_indices(query_len=6, key_len=6, chunk_size=3, dilation=2, device="cpu")
    assert index.tolist() == [[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 1, 0], [4, 2, 0], [5, 3, 1]]
    assert exists.tolist() == [
        [True, False, False], [True, False, False], [True, True, False],
        [True, True, False], [True, True, True], [True, True, True],
    ]  # fmt: skip


def test_depth_is_ceil_log_c_of_length():
    assert [regular_depth(t, 2) for t in (1, 2, 3, 4, 5, 8, 9, 16, 17)] == [1, 1, 2, 2, 3, 3, 4, 4, 5]
    assert [regular_depth(t, 3) for t in (3, 4, 9, 10, 27, 28)] == [1, 2, 2, 3, 3, 4]


@pytest.mark.parametrize("chunk_size", [2, 3])
def test_model_depth_grows_when_length_passes_c_to_the_depth(chunk_size):
    config = hf_icl.config_for("regular_gpt", "tiny", dilated_attention_chunk_size=chunk_size, vocab_size=10)
    model = AutoModelForCausalLM.from_config(config).eval()
    thickness = config.num_hidden_layers
    for depth in (2, 3):
        at_boundary = model(torch.ones(1, chunk_size**depth, dtype=torch.long), output_hidden_states=True)
        beyond = model(torch.ones(1, chunk_size**depth + 1, dtype=torch.long), output_hidden_states=True)
        assert len(at_boundary.hidden_states) == 1 + depth * thickness
        assert len(beyond.hidden_states) == 1 + (depth + 1) * thickness


def test_weights_are_shared_across_depth():
    small = AutoModelForCausalLM.from_config(hf_icl.config_for("regular_gpt", "tiny", vocab_size=10))
    n = small.num_parameters()
    with torch.no_grad():
        short, long = small(torch.ones(1, 4, dtype=torch.long)), small(torch.ones(1, 64, dtype=torch.long))
    assert short.logits.shape[1] == 4 and long.logits.shape[1] == 64 and small.num_parameters() == n
