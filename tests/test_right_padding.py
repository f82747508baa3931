"""A scoring forward (no cache, no maps) of a batch padded on the right drops the mask and takes the unmasked paths
(`modeling.decoder.only_right_padding`): every mixer is causal, so each real position's logits equal those of its row
alone, unpadded. With a cache the mask is kept (a cache must not take in the padding)."""

import pytest
import torch
from transformers import AutoModelForCausalLM

import hf_icl
from hf_icl.modeling import decoder

ARCHITECTURES = ["transformer", "mamba", "rwkv7", "gated_deltanet", "hyena", "lstm", "regular_gpt"]


def right_padded(lengths, total, seed=0):
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, 20, (len(lengths), total), generator=gen)
    mask = (torch.arange(total)[None] < torch.tensor(lengths)[:, None]).long()
    return ids.masked_fill(mask == 0, 0), mask


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_right_padded_scoring_equals_the_masked_forward(architecture, monkeypatch):
    overrides = {"ngram_heads": [{"layer": 0, "orders": [1, 2]}]} if architecture == "transformer" else {}
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(hf_icl.config_for(architecture, "tiny", vocab_size=20, **overrides)).eval()
    ids, mask = right_padded([13, 7, 10], 13)
    real = mask.bool()
    with torch.no_grad():
        fast = model(ids, attention_mask=mask, use_cache=False).logits
        monkeypatch.setattr(decoder, "only_right_padding", lambda mask: False)  # the masked paths, as before
        masked = model(ids, attention_mask=mask, use_cache=False).logits
        torch.testing.assert_close(fast[real], masked[real], atol=2e-5, rtol=1e-4)
        if architecture != "regular_gpt":  # RegularGPT's depth follows the input's length, so a row alone differs
            for row, length in enumerate(mask.sum(1).tolist()):
                alone = model(ids[row : row + 1, :length], use_cache=False).logits[0]
                torch.testing.assert_close(fast[row, :length], alone, atol=2e-5, rtol=1e-4)


def test_the_mask_is_kept_where_it_matters(monkeypatch):
    seen = []
    original = decoder.only_right_padding
    monkeypatch.setattr(decoder, "only_right_padding", lambda mask: seen.append(1) or original(mask))
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(hf_icl.config_for("transformer", "tiny", vocab_size=20)).eval()
    ids, mask = right_padded([6, 4], 6)
    with torch.no_grad():
        model(ids, attention_mask=mask, use_cache=True)  # a cache: the padding must stay masked
        model(ids, attention_mask=mask, use_cache=False, output_attentions=True)  # maps keep their padding rows
        assert seen == []
        model(ids, attention_mask=mask, use_cache=False)
    assert seen == [1]
    assert decoder.only_right_padding(torch.tensor([[1, 1, 0], [1, 1, 1]]))
    assert not decoder.only_right_padding(torch.tensor([[0, 1, 1], [1, 1, 1]]))  # left padding
    assert not decoder.only_right_padding(torch.tensor([[1, 0, 1]]))  # a hole
