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


@pytest.mark.parametrize("missing_keys", ["mask", "zero"])
@pytest.mark.parametrize("chunk_size, depth, length", [(2, 0, 5), (2, 1, 8), (2, 2, 11), (3, 1, 10), (3, 2, 12)])
def test_sparse_attention_equals_dense_equation_one(chunk_size, depth, length, missing_keys):
    torch.manual_seed(0)
    config = hf_icl.config_for(
        "regular_gpt", "tiny", dilated_attention_chunk_size=chunk_size, dilated_attention_missing_keys=missing_keys
    )
    mixer = SlidingDilatedAttention(config, 0)
    with torch.no_grad():
        mixer.offset_bias.normal_()
    hidden = torch.randn(2, length, config.hidden_size)
    with torch.no_grad():
        sparse = mixer(hidden, dilation=chunk_size**depth)
        q, k, v = mixer.qkv_proj(hidden).view(2, length, 3, mixer.num_heads, -1).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-1, -2) * mixer.head_dim**-0.5
        scores = scores + equation_one_mask(length, chunk_size, depth, mixer.offset_bias)[None]  # (B, H, T, T)
        if missing_keys == "zero":  # one more key per missing offset j: a zero key (score r_j) with a zero value
            stride = chunk_size**depth
            before_start = torch.arange(length)[:, None] - torch.arange(chunk_size)[None, :] * stride < 0  # (T, C)
            zero_scores = mixer.offset_bias[:, None, :].expand(-1, length, -1).masked_fill(~before_start, float("-inf"))
            scores = torch.cat([scores, zero_scores[None].expand(2, -1, -1, -1)], dim=-1)  # (B, H, T, T + C)
            v = torch.cat([v, torch.zeros(*v.shape[:2], chunk_size, v.shape[-1])], dim=2)  # (B, H, T + C, D)
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


class _MapRecorder:
    output_attentions = True

    def __init__(self):
        self.maps = []

    def add_attention(self, probs):
        self.maps.append(probs)


def _mixer_pair(chunk_size):
    """The same weights under both treatments of missing keys."""
    torch.manual_seed(0)
    zero = SlidingDilatedAttention(hf_icl.config_for("regular_gpt", "tiny", dilated_attention_chunk_size=chunk_size), 0)
    mask = SlidingDilatedAttention(
        hf_icl.config_for(
            "regular_gpt", "tiny", dilated_attention_chunk_size=chunk_size, dilated_attention_missing_keys="mask"
        ),
        0,
    )
    with torch.no_grad():
        zero.offset_bias.normal_()
    mask.load_state_dict(zero.state_dict())
    return zero, mask


def test_presets_zero_the_missing_keys_and_a_saved_config_without_the_field_masks_them():
    assert hf_icl.config_for("regular_gpt", "tiny").dilated_attention_missing_keys == "zero"
    assert hf_icl.config_for("regular_gpt", "paper").dilated_attention_missing_keys == "zero"
    from hf_icl.architectures.regular_gpt import ICLRegularGPTConfig

    assert ICLRegularGPTConfig().dilated_attention_missing_keys == "mask"  # what hf_icl shipped before the field
    with pytest.raises(ValueError, match="dilated_attention_missing_keys='pad' is not allowed: expected one of"):
        hf_icl.config_for("regular_gpt", "tiny", dilated_attention_missing_keys="pad")


@pytest.mark.parametrize("chunk_size, depth, length", [(2, 0, 5), (2, 1, 8), (2, 2, 11), (3, 1, 10)])
def test_zero_and_masked_missing_keys_agree_where_every_key_exists(chunk_size, depth, length):
    zero, mask = _mixer_pair(chunk_size)
    hidden = torch.randn(2, length, zero.num_heads * zero.head_dim)  # (B, T, d)
    with torch.no_grad():
        a, b = zero(hidden, dilation=chunk_size**depth), mask(hidden, dilation=chunk_size**depth)
    complete = (chunk_size - 1) * chunk_size**depth  # the first query whose C keys all exist
    torch.testing.assert_close(a[:, complete:], b[:, complete:], atol=1e-6, rtol=0)
    assert (a[:, :complete] - b[:, :complete]).abs().amax() > 1e-3  # and differ where a key is missing


@pytest.mark.parametrize("missing_keys", ["zero", "mask"])
@pytest.mark.parametrize("chunk_size, depth, length", [(2, 1, 7), (3, 1, 9)])
def test_attention_map_times_values_is_the_output(chunk_size, depth, length, missing_keys):
    zero, mask = _mixer_pair(chunk_size)
    mixer = zero if missing_keys == "zero" else mask
    hidden = torch.randn(2, length, 64)
    recorder = _MapRecorder()
    with torch.no_grad():
        out = mixer(hidden, dilation=chunk_size**depth, recorder=recorder)
        _, _, value = mixer.split_heads(hidden)  # (B, H, T, D)
        mixed = (recorder.maps[0] @ value).transpose(1, 2).reshape(2, length, -1)  # (B, T, d)
    torch.testing.assert_close(out, mixer.out_proj(mixed), atol=1e-5, rtol=0)


def test_masked_missing_keys_cannot_tell_parities_apart_and_zero_keys_can():
    """`11?` and `111?` (opposite parity, depth 2) end in one state with masked keys, whatever the weights."""
    for seed in range(3):
        logits = {}
        for missing_keys in ("mask", "zero"):
            torch.manual_seed(seed)
            config = hf_icl.config_for("regular_gpt", "tiny", vocab_size=5, dilated_attention_missing_keys=missing_keys)
            model = AutoModelForCausalLM.from_config(config).eval()
            with torch.no_grad():
                even = model(torch.tensor([[2, 2, 4]])).logits[0, -1]  # "11?"
                odd = model(torch.tensor([[2, 2, 2, 4]])).logits[0, -1]  # "111?"
            logits[missing_keys] = (even - odd).abs().amax().item()
        assert logits["mask"] < 1e-5 and logits["zero"] > 1e-3, logits
