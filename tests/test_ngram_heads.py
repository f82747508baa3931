"""N-gram heads (P1 §6, App. F): fast NGH == Figure 7, cached == full, Triton == torch, NgramBlock, insertion."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from backend_oracle import assert_model_agrees_under_both_backends, spy_on_kernel
from hypothesis import given, settings
from hypothesis import strategies as st
from test_models import assert_remote_code_matches, prefix_logits, step_by_step_logits
from transformers import AutoModelForCausalLM

import hf_icl
from hf_icl.block_features.ngram_heads import NgramBlock
from hf_icl.mixers import ngram as ngram_module
from hf_icl.mixers.ngram import NgramHead, ngram_head_average, ngram_ids
from hf_icl.mixers.ops.cpu_paths import SCAN_BACKEND_ENV
from hf_icl.modeling.cache import ICLCache
from hf_icl.training.arguments import parse_args


def figure7_ngram_head(x, hidden_state, shift_step=1, ngram=1):
    """P1 Appendix F, Figure 7, verbatim (O(T²) boolean masks): the semantic reference."""
    bsz, seq_len = x.shape

    # bsz * L * L, match unigram as the first step
    mask_0 = x[:, None, :] == x[:, :, None]
    causal_mask = torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=x.device), diagonal=-1)
    mask_0 = torch.logical_and(mask_0, causal_mask)

    masks = [mask_0.long()]
    for _ in range(1, ngram):
        # mask_0[i, j] = True means token i-1 and token j-1 is matched
        mask_0 = F.pad(mask_0, (1, -1, 1, -1), "constant", False)
        masks.append(mask_0.long())
    ngram_mask = torch.stack(masks, dim=-1).sum(dim=-1) >= ngram
    if shift_step > 0:
        ngram_mask = F.pad(ngram_mask, (shift_step, -shift_step), "constant", False)
    ngram_mask = torch.logical_and(ngram_mask, causal_mask)

    # form a uniform distribution for matched tokens
    ngram_mask_norm = ngram_mask / ngram_mask.sum(dim=2, keepdim=True)
    ngram_mask_norm = torch.nan_to_num(ngram_mask_norm, 0)
    ngram_mask_norm = ngram_mask_norm.to(hidden_state.dtype)
    output = torch.einsum("bmn,bnz->bmz", ngram_mask_norm, hidden_state)
    return output


def random_batch(draw_lengths, vocab, width=5, seed=0):
    """Left-padded token batch (pad id 0, real ids 1..vocab) and float64 hidden states."""
    gen = torch.Generator().manual_seed(seed)
    total = max(draw_lengths)
    ids = torch.randint(1, vocab + 1, (len(draw_lengths), total), generator=gen)
    mask = torch.arange(total)[None] >= torch.tensor([total - n for n in draw_lengths])[:, None]
    ids = torch.where(mask, ids, 0)
    hidden = torch.randn(len(draw_lengths), total, width, generator=gen, dtype=torch.float64)
    return ids, mask, hidden


@settings(max_examples=40, deadline=None)
@given(
    n=st.sampled_from([1, 2, 3]),
    shift=st.sampled_from([0, 1, 2]),
    vocab=st.integers(1, 4),
    lengths=st.lists(st.integers(1, 24), min_size=1, max_size=3),
    seed=st.integers(0, 1000),
)
def test_fast_head_equals_figure7_with_padding(n, shift, vocab, lengths, seed):
    ids, mask, hidden = random_batch(lengths, vocab, seed=seed)
    hidden.requires_grad_(True)
    fast = ngram_head_average(ids, hidden, n, shift, attention_mask=mask)
    cotangent = torch.randn_like(fast)
    (grad_fast,) = torch.autograd.grad(fast, hidden, cotangent)
    for row, length in enumerate(lengths):  # each row alone, unpadded, through Figure 7
        real = slice(ids.shape[1] - length, None)
        alone = hidden[row : row + 1, real]
        if length <= shift:  # Figure 7's F.pad cannot crop more than the row; no position has a match
            assert not fast[row].any()
            continue
        reference = figure7_ngram_head(ids[row : row + 1, real], alone, shift_step=shift, ngram=n)
        torch.testing.assert_close(fast[row, real], reference[0], atol=1e-6, rtol=0)
        (grad_ref,) = torch.autograd.grad(reference, alone, cotangent[row : row + 1, real])
        torch.testing.assert_close(grad_fast[row, real], grad_ref[0], atol=1e-6, rtol=0)
    assert not fast[~mask].any() and not grad_fast[~mask].any()  # padding is never matched nor averaged


@settings(max_examples=40, deadline=None)
@given(
    n=st.sampled_from([1, 2, 3]),
    shift=st.sampled_from([0, 1, 2]),
    vocab=st.integers(1, 4),
    lengths=st.lists(st.integers(1, 30), min_size=1, max_size=4),
    seed=st.integers(0, 1000),
    dtype=st.sampled_from([torch.float32, torch.float64]),
)
def test_compiled_segment_sums_equal_the_torch_path(n, shift, vocab, lengths, seed, dtype):
    """The numba segmented sums (CPU default) against the float64-cumsum PyTorch path, forward and backward."""
    ids, mask, hidden = random_batch(lengths, vocab, width=7, seed=seed)
    hidden = hidden.to(dtype).requires_grad_(True)
    cotangent = torch.randn(hidden.shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))
    results = {}
    for backend in ("numba", "torch"):
        os.environ[SCAN_BACKEND_ENV] = backend
        try:
            out = ngram_head_average(ids, hidden, n, shift, attention_mask=mask)
        finally:
            del os.environ[SCAN_BACKEND_ENV]
        results[backend] = (out, torch.autograd.grad(out, hidden, cotangent)[0])
    tolerance = 1e-5 if dtype == torch.float32 else 1e-12
    torch.testing.assert_close(results["numba"][0], results["torch"][0], atol=tolerance, rtol=0)
    torch.testing.assert_close(results["numba"][1], results["torch"][1], atol=tolerance, rtol=0)


def test_compiled_segment_sums_are_dispatched_only_where_they_apply(monkeypatch):
    ids, mask, hidden = random_batch([12, 9], vocab=2, width=4, seed=3)
    calls = spy_on_kernel(monkeypatch, ngram_module, "NumbaSegmentSums")
    ngram_head_average(ids, hidden.float(), 2, 1, mask)  # float32 CPU: the kernel
    ngram_head_average(ids, hidden, 2, 1, mask)  # float64 CPU: the kernel
    ngram_head_average(ids, hidden.bfloat16(), 2, 1, mask)  # bf16 (autocast): the PyTorch path
    monkeypatch.setenv(SCAN_BACKEND_ENV, "torch")
    ngram_head_average(ids, hidden.float(), 2, 1, mask)
    assert calls == [torch.float32, torch.float64]


def test_a_model_with_ngram_heads_trains_the_same_under_both_backends(monkeypatch):
    """Loss and every gradient of a Transformer with NGH^(1,2,3), compiled path against the PyTorch path."""
    heads = [{"layer": 1, "orders": [1, 2, 3]}]
    assert_model_agrees_under_both_backends(monkeypatch, "transformer", 1e-6, tokens=6, length=40, ngram_heads=heads)


def test_unpadded_batch_and_hand_cases():
    ids, _, hidden = random_batch([30, 30, 30], vocab=2, seed=1)
    for n, shift in [(1, 1), (2, 0), (3, 2)]:
        torch.testing.assert_close(
            ngram_head_average(ids, hidden, n, shift), figure7_ngram_head(ids, hidden, shift, n), atol=1e-6, rtol=0
        )
    # "a b a b a", bigram head (n=1, shift=1): position 2 (a) reads position 1 (after a@0); position 4 (a) reads
    # positions 1 and 3; position 3 (b) reads position 2 (after b@1); positions 0 and 1 have no earlier match.
    h = torch.arange(5, dtype=torch.float64)[None, :, None]
    out = ngram_head_average(torch.tensor([[1, 2, 1, 2, 1]]), h, n=1, shift=1)
    assert out.flatten().tolist() == [0.0, 0.0, 1.0, 2.0, 2.0]
    # Padding inside a row ("a b a <pad> a"): the pad is never averaged, so position 4 reads position 1 only.
    mask = torch.tensor([[1, 1, 1, 0, 1]])
    out = ngram_head_average(torch.tensor([[1, 2, 1, 0, 1]]), h, n=1, shift=1, attention_mask=mask)
    assert out.flatten().tolist() == [0.0, 0.0, 1.0, 0.0, 1.0]


def test_ngram_ids_are_exact_for_huge_ids():
    """Token ids near 2^40 force the overflow re-ranking; ids must still be equal iff the n-grams are."""
    gen = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, 3, (2, 40), generator=gen) * (2**40 - 7)
    tokens[0, 5] = -1  # a gap
    ids = ngram_ids(tokens, 3)
    for b in range(2):
        for p in range(40):
            gram = tuple(tokens[b, p - 2 : p + 1].tolist()) if p >= 2 else None
            assert (ids[b, p] < 0) == (gram is None or min(gram) < 0)
    valid = ids >= 0
    grams = tokens.unfold(1, 3, 1)  # gram ending at p is grams[:, p - 2]
    for b1, p1 in valid.nonzero().tolist():
        for b2, p2 in valid.nonzero().tolist():
            same = b1 == b2 and torch.equal(grams[b1, p1 - 2], grams[b2, p2 - 2])
            assert (ids[b1, p1] == ids[b2, p2]).item() == same


def run_in_chunks(head, ids, mask, hidden, chunks, reorder=None):
    """Feed the head chunk by chunk through a cache; `reorder` permutes the rows after the first chunk."""
    cache, outputs, start = ICLCache(1), [], 0
    for i, size in enumerate(chunks):
        stop = start + size
        out = head(hidden[:, start:stop], attention_mask=mask[:, :stop], cache=cache, input_ids=ids[:, start:stop])
        outputs.append(out)
        if i == 0 and reorder is not None:
            cache.reorder_cache(reorder)
            ids, mask, hidden = ids[reorder], mask[reorder], hidden[reorder]
            outputs = [o[reorder] for o in outputs]
        start = stop
    return torch.cat(outputs, dim=1), ids, mask, hidden, cache.layer_state(0)


@settings(max_examples=25, deadline=None)
@given(
    n=st.sampled_from([1, 2, 3]),
    shift=st.sampled_from([0, 1, 2]),
    vocab=st.integers(1, 7),
    cuts=st.lists(st.integers(1, 9), min_size=1, max_size=8),
    seed=st.integers(0, 1000),
)
def test_cached_chunks_equal_full_forward(n, shift, vocab, cuts, seed):
    """Prefill + decode in arbitrary chunks (incl. single tokens, a padded decode step, table growth past 8)."""
    torch.manual_seed(seed)
    config = hf_icl.config_for("transformer", "tiny", vocab_size=20, hidden_size=8, ngram_shift=shift)
    head = NgramHead(config, layer_idx=0, order=n).double()
    lengths = [sum(cuts), max(1, sum(cuts) - 3)]
    ids, mask, hidden = random_batch(lengths, vocab, width=8, seed=seed)
    gap = ids.shape[1] - 1 - cuts[-1] if len(cuts) > 1 else ids.shape[1] - 1
    mask[1, gap], ids[1, gap] = False, 0  # padding inside the stream (a padded decode step when cuts[-2] == 1)
    full = head(hidden, attention_mask=mask, input_ids=ids)
    chunked, *_ = run_in_chunks(head, ids, mask, hidden, cuts)
    torch.testing.assert_close(chunked[mask], full[mask], atol=1e-6, rtol=0)


def test_beam_reorder_keeps_each_row_table():
    config = hf_icl.config_for("transformer", "tiny", vocab_size=20, hidden_size=8)
    head = NgramHead(config, layer_idx=0, order=2).double()
    ids, mask, hidden = random_batch([30, 30, 22], vocab=3, width=8, seed=4)
    reorder = torch.tensor([2, 2, 0])
    chunked, ids, mask, hidden, state = run_in_chunks(head, ids, mask, hidden, [12, 1, 1, 16], reorder=reorder)
    assert state.get("ngram_keys").shape[1] > 8  # the tables grew past their initial capacity
    full = head(hidden, attention_mask=mask, input_ids=ids)
    torch.testing.assert_close(chunked[mask], full[mask], atol=1e-6, rtol=0)


TRITON_CHECK = textwrap.dedent(
    """
    import sys, types
    import torch
    for name in ("hf_icl", "hf_icl.mixers"):  # import the mixer alone: skip the package's heavy __init__ imports
        sys.modules[name] = types.ModuleType(name)
        sys.modules[name].__path__ = [sys.argv[1] + "/" + name.replace(".", "/")]
    from hf_icl.mixers.ngram import ngram_head_average
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(1, 4, (3, 50), generator=gen)
    mask = torch.ones(3, 50, dtype=torch.bool)
    mask[1, :7] = False
    hidden = torch.randn(3, 50, 40, generator=gen, requires_grad=True)  # d = 40: a partial column block
    cotangent = torch.randn(3, 50, 40, generator=gen)
    for n, shift in [(1, 1), (2, 0), (3, 2)]:
        outs = [ngram_head_average(ids, hidden, n, shift, mask, use_triton=flag) for flag in (True, False)]
        grads = [torch.autograd.grad(out, hidden, cotangent)[0] for out in outs]
        assert outs[0].abs().sum() > 0
        torch.testing.assert_close(outs[0], outs[1], atol=1e-5, rtol=0)
        torch.testing.assert_close(grads[0], grads[1], atol=1e-5, rtol=0)
    print("ok")
    """
)


def _triton_importable() -> bool:
    try:
        import triton  # noqa: F401
    except Exception:
        return False
    return True


@pytest.mark.skipif(not _triton_importable(), reason="triton is not installed (pip install triton)")
def test_triton_kernel_under_interpreter_equals_torch():
    env = {**os.environ, "TRITON_INTERPRET": "1", "OMP_NUM_THREADS": "1"}
    root = str(Path(__file__).resolve().parents[1])
    result = subprocess.run(
        [sys.executable, "-c", TRITON_CHECK, root], capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-3000:]


@pytest.mark.skipif(
    not (torch.cuda.is_available() and _triton_importable()), reason="needs CUDA and triton for the compiled kernel"
)
def test_triton_kernel_on_cuda_equals_cpu():
    ids, mask, hidden = random_batch([64, 50], vocab=3, width=96, seed=2)
    hidden = hidden.float()
    for n, shift in [(1, 1), (3, 0)]:
        cpu = ngram_head_average(ids, hidden, n, shift, mask)
        gpu = ngram_head_average(ids.cuda(), hidden.cuda(), n, shift, mask.cuda())
        torch.testing.assert_close(gpu.cpu(), cpu, atol=1e-5, rtol=0)


@pytest.mark.parametrize("width", [16, 64])
def test_ngram_block_has_4d2_weights(width):
    config = hf_icl.config_for("transformer", "tiny", hidden_size=width, num_attention_heads=1)
    block = NgramBlock(config, layer_idx=2, order=3)
    matrices = sum(p.numel() for p in block.parameters() if p.ndim == 2)
    assert matrices == 4 * width * width  # W1, W2, MLP in and out; no biases
    assert sum(p.numel() for p in block.parameters()) == 4 * width * width + 2 * width  # + two RMSNorm gains


INSERTION_ARCHS = ["transformer", "retnet", "gla", "mamba"]
SPECS = {
    "after0": [{"layer": 0, "orders": [1, 2, 3]}],
    "after-1": [{"layer": -1, "orders": [2]}],
    "replace1+replace-2": [
        {"layer": 1, "orders": [1, 2], "replace": True},
        {"layer": -2, "orders": [3], "replace": True},
    ],
}
# (kind, layer or order) of the resulting stack, at L = 2
LAYOUTS = {
    "after0": [("block", 0), ("ngram", 1), ("ngram", 2), ("ngram", 3), ("block", 1)],
    "after-1": [("block", 0), ("block", 1), ("ngram", 2)],
    "replace1+replace-2": [("ngram", 3), ("ngram", 1), ("ngram", 2)],
}


def ngram_model(arch, spec, seed=0, num_layers=2):
    assert arch in hf_icl.list_architectures(), f"architecture {arch!r} is not registered"
    torch.manual_seed(seed)
    specs = SPECS[spec] if isinstance(spec, str) else spec
    config = hf_icl.config_for(arch, "tiny", vocab_size=20, num_hidden_layers=num_layers, ngram_heads=specs)
    return AutoModelForCausalLM.from_config(config).eval()


def layout(model):
    return [
        ("ngram", l.mixer.order) if isinstance(l, NgramBlock) else ("block", l.mixer.layer_idx)
        for l in model.model.layers
    ]


def test_language_model_layout_replaces_second_and_second_to_last():
    """P1 Table 2: NGH_1^(1,2,3) + NGH_-2^(1,2,3), each replacing a layer, here in a 5-layer model."""
    specs = [{"layer": m, "orders": [1, 2, 3], "replace": True} for m in (1, -2)]
    model = ngram_model("transformer", specs, num_layers=5)
    bundle = [("ngram", 1), ("ngram", 2), ("ngram", 3)]
    assert layout(model) == [("block", 0), *bundle, ("block", 2), *bundle, ("block", 4)]
    assert [l.mixer.layer_idx for l in model.model.layers if isinstance(l, NgramBlock)] == [5, 6, 7, 8, 9, 10]


def repetitive_batch():
    """A left-padded batch over a 3-letter alphabet, so the n-gram heads find many matches."""
    input_ids = torch.randint(1, 4, (2, 18), generator=torch.Generator().manual_seed(0))
    attention_mask = (torch.arange(18)[None] >= torch.tensor([[3], [0]])).long()
    return input_ids * attention_mask, attention_mask


@pytest.mark.parametrize("spec", sorted(SPECS))
@pytest.mark.parametrize("arch", INSERTION_ARCHS)
def test_insertion_layout_and_cached_decode(arch, spec):
    model = ngram_model(arch, spec)
    assert layout(model) == LAYOUTS[spec]
    slots = [l.mixer.layer_idx for l in model.model.layers]
    assert len(set(slots)) == len(slots)  # every layer has its own cache slot
    input_ids, attention_mask = repetitive_batch()
    with torch.no_grad():
        full = model(input_ids, attention_mask=attention_mask).logits
        stepped = step_by_step_logits(model, input_ids, attention_mask, prefill=5)
        alone = model(input_ids[:1, 3:]).logits
    real = attention_mask.bool()
    torch.testing.assert_close(stepped[real], full[real], atol=1e-4, rtol=0)
    torch.testing.assert_close(prefix_logits(model, input_ids, attention_mask)[real], full[real], atol=1e-4, rtol=0)
    torch.testing.assert_close(full[0, 3:], alone[0], atol=1e-4, rtol=0)  # left padding changes nothing
    kwargs = dict(attention_mask=attention_mask, max_new_tokens=5, pad_token_id=0, eos_token_id=None)
    for mode in (dict(do_sample=False), dict(num_beams=3, num_return_sequences=2, do_sample=False)):
        cached = model.generate(input_ids, **mode, **kwargs)
        assert torch.equal(cached, model.generate(input_ids, use_cache=False, **mode, **kwargs))


def test_save_load_and_remote_code_keep_ngram_blocks(tmp_path):
    model = ngram_model("transformer", "replace1+replace-2")
    model.save_pretrained(tmp_path / "ckpt")
    assert json.loads((tmp_path / "ckpt" / "config.json").read_text())["ngram_heads"] == SPECS["replace1+replace-2"]
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path / "ckpt").eval()
    input_ids, attention_mask = repetitive_batch()
    with torch.no_grad():
        expected = model(input_ids, attention_mask=attention_mask).logits
        torch.testing.assert_close(loaded(input_ids, attention_mask=attention_mask).logits, expected, atol=0, rtol=0)
    assert_remote_code_matches(model, tmp_path / "ckpt", input_ids, attention_mask)


@pytest.mark.parametrize(
    "arch, overrides, message",
    [
        (
            "transformer",
            dict(ngram_heads=[{"layer": 2, "orders": [1]}]),
            r"ngram_heads\[0\]\.layer=2 must be .*\[-2, 1\]",
        ),
        ("transformer", dict(ngram_heads=[{"layer": 0, "orders": [0]}]), r"ngram_heads\[0\]\.orders=\[0\]"),
        ("transformer", dict(ngram_heads=[{"layer": 0, "orders": [1], "after": 1}]), "key 'after', which is not one"),
        ("transformer", dict(ngram_heads=[{"layer": 0, "orders": [1]}, {"layer": -2, "orders": [1]}]), "again"),
        ("transformer", dict(ngram_shift=-1), "ngram_shift=-1 must be ≥ 0"),
        ("regular_gpt", dict(ngram_heads=[{"layer": 0, "orders": [1]}]), "not supported by icl_regular_gpt"),
    ],
)
def test_config_errors_name_the_field(arch, overrides, message):
    with pytest.raises(ValueError, match=message):
        hf_icl.config_for(arch, "tiny", **overrides)


def test_train_py_ngram_heads_option():
    args = parse_args(["--preset", "small", "--ngram-heads", "1:1,2,3", "--ngram-heads=-2:1,2,3:replace"])
    assert args.overrides["ngram_heads"] == [
        {"layer": 1, "orders": [1, 2, 3], "replace": False},
        {"layer": -2, "orders": [1, 2, 3], "replace": True},
    ]
    assert str(args.resolved_output_dir()) == "outputs/regbench-n2500-transformer+ngh1.123+nghr-2.123-small-s0"
    assert parse_args(["--preset", "small", "--ngram-heads", "1:1;3:2:replace"]).overrides["ngram_heads"][1]["replace"]
    with pytest.raises(SystemExit):
        parse_args(["--ngram-heads", "1:a"])
    with pytest.raises(ValueError, match="ngram_heads"):
        parse_args(["--ngram-heads", "9:1"])  # small preset has 4 layers


def test_a_config_file_takes_the_flags_ngram_heads_syntax(tmp_path):
    """`overrides: {ngram_heads: "1:1,2,3"}` in a --config file means what `--ngram-heads 1:1,2,3` means."""
    written = tmp_path / "run.yaml"
    written.write_text('preset: small\noverrides: {ngram_heads: "1:1,2,3;-2:1:replace"}\n')
    assert parse_args(["--config", str(written)]).overrides["ngram_heads"] == [
        {"layer": 1, "orders": [1, 2, 3], "replace": False},
        {"layer": -2, "orders": [1], "replace": True},
    ]
    written.write_text('preset: small\noverrides: {ngram_heads: "1:a"}\n')
    with pytest.raises(ValueError, match=r"--config: overrides\.ngram_heads entry '1:a' must look like LAYER:ORDERS"):
        parse_args(["--config", str(written)])
