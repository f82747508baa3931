"""Common oracles for every registered architecture: cache ≡ full forward, generation, save/load, remote code."""

import json
import re
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch
from transformers import AutoModelForCausalLM, pipeline

import hf_icl
from hf_icl.tasks.regbench import regbench_tokenizer

ARCHS = hf_icl.list_architectures()
# Every architecture at its defaults, plus the variants that change the forward pass (position schemes, and n-gram
# heads inserted after the first layer and in place of the last).
VARIANTS = (
    {arch: {} for arch in ARCHS}
    | {f"transformer-{scheme}": {"position_embedding": scheme} for scheme in ("rope", "alibi", "nope")}
    | {"transformer-hard_alibi": {"position_embedding": "hard_alibi", "num_masked_heads": 1}}
    | {"gla-ngram": {"ngram_heads": [{"layer": 0, "orders": [1, 2]}, {"layer": -1, "orders": [3], "replace": True}]}}
)


def tiny_model(arch, seed=0, **overrides):
    torch.manual_seed(seed)
    arch, _, _ = arch.partition("-")
    config = hf_icl.config_for(arch, "tiny", vocab_size=20, **overrides)
    return AutoModelForCausalLM.from_config(config).eval()


def variant_model(name, seed=0):
    return tiny_model(name, seed=seed, **VARIANTS[name])


def left_padded_batch():
    input_ids = torch.tensor([[0, 0, 0, 3, 5, 7, 19, 2, 4], [1, 2, 3, 4, 19, 5, 6, 7, 8]])
    attention_mask = (torch.arange(9)[None] >= torch.tensor([[3], [0]])).long()
    return input_ids, attention_mask


def step_by_step_logits(model, input_ids, attention_mask, prefill):
    """Prefill `prefill` tokens, then decode one token at a time through the cache."""
    out = model(input_ids[:, :prefill], attention_mask=attention_mask[:, :prefill], use_cache=True)
    cache, logits = out.cache, [out.logits]
    for t in range(prefill, input_ids.shape[1]):
        out = model(input_ids[:, t : t + 1], attention_mask=attention_mask[:, : t + 1], cache=cache, use_cache=True)
        cache = out.cache
        logits.append(out.logits)
    return torch.cat(logits, dim=1)


def adaptive_depth(model) -> bool:
    """The backbone's depth grows with the input length (RegularGPT), so earlier positions' logits change."""
    return hasattr(model.model, "depth_for") and not getattr(model.config, "fixed_depth", None)


def prefix_logits(model, input_ids, attention_mask):
    """Next-token logits after every prefix, each from an uncached forward of that prefix alone."""
    with torch.no_grad():
        return torch.stack(
            [
                model(input_ids[:, : t + 1], attention_mask=attention_mask[:, : t + 1]).logits[:, -1]
                for t in range(input_ids.shape[1])
            ],
            dim=1,
        )


@pytest.mark.parametrize("arch", sorted(VARIANTS))
@pytest.mark.parametrize("prefill", [1, 4])
def test_cached_decode_equals_full_forward(arch, prefill):
    model = variant_model(arch)
    input_ids, attention_mask = left_padded_batch()
    with torch.no_grad():
        full = model(input_ids, attention_mask=attention_mask).logits
        stepped = step_by_step_logits(model, input_ids, attention_mask, prefill)
    reference = prefix_logits(model, input_ids, attention_mask)
    real = attention_mask.bool()
    if adaptive_depth(model):  # a forward's earlier positions use the depth of its full length
        real[:, : prefill - 1] = False
    torch.testing.assert_close(stepped[real], reference[real], atol=1e-4, rtol=0)
    if not adaptive_depth(model):  # one causal forward gives every prefix's logits at once
        torch.testing.assert_close(full[real], reference[real], atol=1e-4, rtol=0)
    # A left-padded row gives the same logits as the same row unpadded (adaptive depth reads the padded
    # length, as in P2, so for those architectures padding that adds depth legitimately changes the output).
    if not adaptive_depth(model):
        with torch.no_grad():
            alone = model(input_ids[:1, 3:]).logits
        torch.testing.assert_close(full[0, 3:], alone[0], atol=1e-4, rtol=0)


@pytest.mark.parametrize("arch", sorted(VARIANTS))
def test_generate_modes(arch):
    model = variant_model(arch)
    input_ids, attention_mask = left_padded_batch()
    kwargs = dict(attention_mask=attention_mask, max_new_tokens=6, pad_token_id=0, eos_token_id=None)
    greedy = model.generate(input_ids, do_sample=False, **kwargs)
    greedy_nocache = model.generate(input_ids, do_sample=False, use_cache=False, **kwargs)
    assert torch.equal(greedy, greedy_nocache)
    torch.manual_seed(3)
    sampled = model.generate(input_ids, do_sample=True, top_k=0, **kwargs)
    torch.manual_seed(3)
    sampled_nocache = model.generate(input_ids, do_sample=True, top_k=0, use_cache=False, **kwargs)
    assert torch.equal(sampled, sampled_nocache)
    multi = model.generate(input_ids, do_sample=True, num_return_sequences=3, **kwargs)
    assert multi.shape == (6, 15)
    beams = model.generate(input_ids, num_beams=3, num_return_sequences=2, do_sample=False, **kwargs)
    beams_nocache = model.generate(
        input_ids, num_beams=3, num_return_sequences=2, do_sample=False, use_cache=False, **kwargs
    )
    assert beams.shape == (4, 15)
    assert torch.equal(beams, beams_nocache)


@pytest.mark.parametrize("arch", sorted(VARIANTS))
def test_save_load_round_trip(arch, tmp_path):
    model = variant_model(arch)
    with torch.no_grad():  # move every weight off its initial value, so a load that re-initialises cannot pass
        for parameter in model.parameters():
            parameter.add_(0.05 * torch.randn_like(parameter))
    model.save_pretrained(tmp_path)
    assert (tmp_path / "model.safetensors").exists()
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    assert type(loaded) is type(model)
    input_ids, attention_mask = left_padded_batch()
    with torch.no_grad():
        torch.testing.assert_close(
            loaded(input_ids, attention_mask=attention_mask).logits,
            model(input_ids, attention_mask=attention_mask).logits,
            atol=0,
            rtol=0,
        )


REMOTE_LOAD = textwrap.dedent(
    """
    import json, sys
    sys.modules["hf_icl"] = None  # hf_icl must not be importable here
    import torch
    from transformers import AutoModelForCausalLM
    job = json.load(open(sys.argv[1]))
    input_ids, mask = torch.tensor(job["input_ids"]), torch.tensor(job["attention_mask"])
    results = {}
    for folder in job["folders"]:
        try:
            model = AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True).eval()
            assert "hf_icl" not in type(model).__module__, type(model).__module__
            with torch.no_grad():
                logits = model(input_ids, attention_mask=mask).logits
                generated = model.generate(input_ids, attention_mask=mask, max_new_tokens=4, do_sample=False,
                                           pad_token_id=0, eos_token_id=None)
            results[folder] = {"logits": logits.tolist(), "generated": generated.tolist()}
        except Exception as error:  # reported per folder: the test of that checkpoint fails with it
            results[folder] = {"error": f"{type(error).__name__}: {error}"}
    print(json.dumps(results))
    """
)


def load_remotely(checkpoints, input_ids, attention_mask) -> dict[str, dict]:
    """Every checkpoint folder loaded in one fresh process without hf_icl (`REMOTE_LOAD`; the folders' names must
    differ, as they name the remote code's modules): `{folder: {"logits", "generated"} or {"error"}}`."""
    root = checkpoints[0].parent
    job = {"folders": [str(c) for c in checkpoints], "input_ids": input_ids.tolist(),
           "attention_mask": attention_mask.tolist()}  # fmt: skip
    (root / "remote_jobs.json").write_text(json.dumps(job))
    env = {"HF_MODULES_CACHE": str(root / "modules"), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
           "PATH": "/usr/bin:/bin"}  # fmt: skip
    result = subprocess.run([sys.executable, "-c", REMOTE_LOAD, str(root / "remote_jobs.json")], capture_output=True,
                            text=True, env=env, cwd=root, timeout=600)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def remote_loads(request, tmp_path_factory):
    """The variants this session selected (`-k` may pick a few) saved, then all loaded as remote code in one fresh
    process (one interpreter start, not one per variant): the checkpoints' folder and `load_remotely`'s results."""
    names = sorted({item.callspec.params["arch"] for item in request.session.items
                    if getattr(item, "originalname", None) == "test_remote_code_load_in_fresh_process"})  # fmt: skip
    root = tmp_path_factory.mktemp("remote")
    for name in names:
        variant_model(name).save_pretrained(root / name)
    return root, load_remotely([root / name for name in names], *left_padded_batch())


@pytest.mark.parametrize("arch", sorted(VARIANTS))
def test_remote_code_load_in_fresh_process(arch, remote_loads):
    root, remote = remote_loads
    checkpoint = root / arch
    config = json.loads((checkpoint / "config.json").read_text())
    assert set(config["auto_map"]) >= {"AutoConfig", "AutoModel", "AutoModelForCausalLM"}
    for path in checkpoint.glob("*.py"):
        assert not re.search(r"^\s*(from|import)\s+(hf_icl|\.\.)", path.read_text(), re.M), path.name
    assert_remote_code_matches(variant_model(arch), checkpoint, *left_padded_batch(), remote=remote[str(checkpoint)])


def assert_remote_code_matches(model, checkpoint, input_ids, attention_mask, remote=None) -> None:
    """The saved `checkpoint` loaded in a fresh process without hf_icl (`load_remotely`, or its result `remote` for
    this checkpoint) gives `model`'s logits and its cached greedy generation."""
    if remote is None:
        remote = load_remotely([checkpoint], input_ids, attention_mask)[str(checkpoint)]
    assert "error" not in remote, remote.get("error")
    with torch.no_grad():
        local = model(input_ids, attention_mask=attention_mask).logits
        kwargs = dict(max_new_tokens=4, do_sample=False, pad_token_id=0, eos_token_id=None)
        generated = model.generate(input_ids, attention_mask=attention_mask, **kwargs)
    torch.testing.assert_close(torch.tensor(remote["logits"]), local, atol=1e-6, rtol=0)
    assert remote["generated"] == generated.tolist()  # cached greedy decoding in the exported code


@pytest.mark.parametrize("arch", sorted(VARIANTS))
def test_pipeline_text_generation(arch):
    model = variant_model(arch)
    generator = pipeline("text-generation", model=model, tokenizer=regbench_tokenizer())
    outputs = generator(["abc|ab", "a"], max_new_tokens=5, do_sample=False, batch_size=2)
    for prompt, out in zip(["abc|ab", "a"], outputs):
        text = out[0]["generated_text"]
        assert text.startswith(prompt) and len(text) <= len(prompt) + 5


def test_the_old_cache_keyword_still_continues_the_cache():
    # transformers 5.24 renamed `past_key_values` to `cache`; the old keyword goes through its deprecate_kwarg.
    model = tiny_model("gla")
    input_ids, attention_mask = left_padded_batch()
    logits = {}
    with torch.no_grad():
        for name in ("cache", "past_key_values"):
            cache = model(input_ids[:, :6], attention_mask=attention_mask[:, :6], use_cache=True).cache
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                out = model(input_ids[:, 6:], attention_mask=attention_mask, use_cache=True, **{name: cache})
            logits[name] = out.logits
            assert any("past_key_values" in str(w.message) for w in caught) == (name == "past_key_values")
        torch.testing.assert_close(logits["past_key_values"], logits["cache"], atol=0, rtol=0)
        with pytest.raises(ValueError, match="past_key_values"):
            model(input_ids[:, 6:], cache=cache, past_key_values=cache, use_cache=True)


def test_learned_positions_reject_long_inputs():
    model = tiny_model("transformer", max_position_embeddings=8)
    with pytest.raises(ValueError, match="max_position_embeddings=8"):
        model(torch.ones(1, 9, dtype=torch.long))


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(position_embedding="abc"), "position_embedding='abc' is not one of"),
        (dict(ffn="conv"), "ffn='conv' is not one of"),
        (dict(mixer="nope"), r"mixer_types\[0\]='nope' is not one of"),
        (dict(hidden_siz=3), "config field 'hidden_siz' is not a field"),
        (dict(hidden_size=30, num_attention_heads=4), "must be divisible"),
    ],
)
def test_config_errors_name_the_field(overrides, message):
    with pytest.raises(ValueError, match=message):
        hf_icl.config_for("transformer", "tiny", **overrides)


def test_unknown_architecture_and_preset():
    with pytest.raises(ValueError, match="architecture='gpt5' is not one of: .*transformer"):
        hf_icl.config_for("gpt5")
    with pytest.raises(ValueError, match="preset='huge' is not one of"):
        hf_icl.config_for("transformer", "huge")


@pytest.mark.parametrize("variant", [name for name in sorted(VARIANTS) if name.startswith("transformer")])
def test_sdpa_equals_eager(variant):
    input_ids, attention_mask = left_padded_batch()
    model = variant_model(variant)
    outs = {}
    for impl in ("eager", "sdpa"):
        model.config._attn_implementation = impl
        with torch.no_grad():
            outs[impl] = model(input_ids, attention_mask=attention_mask).logits
    real = attention_mask.bool()
    torch.testing.assert_close(outs["eager"][real], outs["sdpa"][real], atol=1e-5, rtol=0)
