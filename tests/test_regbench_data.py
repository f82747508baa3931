"""RegBench generator: format, determinism, minimisation, disjointness, statistics (DESIGN §5.1, §6)."""

import hashlib
import json
import os
import subprocess
import sys

import datasets
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hf_icl
from hf_icl.tasks.regbench import (
    REGBENCH_VOCAB,
    RegBenchConfig,
    generate_regbench,
    instance_statistics,
    next_token_truth,
)
from hf_icl.tasks.regbench.sampling import SamplingRanges, _draw_raw_batch, minimise

SMALL = dict(n_train=12, n_test=6, n_validation=6)


def _config(**kwargs) -> RegBenchConfig:
    return RegBenchConfig(name="test", **kwargs)


def _key(row) -> tuple:
    return tuple((t["src"], t["symbol"], t["dst"]) for t in row["transitions"])


def _walks(edges: list[dict], max_len: int) -> set[str]:
    """All strings of length <= max_len accepted from state 0 (every state accepts; prefix closed)."""
    out, frontier = {""}, [("", 0)]
    for _ in range(max_len):
        frontier = [(w + chr(96 + c), q2) for w, q in frontier for c, q2 in edges[q].items()]
        out.update(w for w, _ in frontier)
    return out


def _as_edges(num_states: int, transitions) -> list[dict]:
    edges = [{} for _ in range(num_states)]
    for src, c, dst in transitions:
        edges[src][c] = dst
    return edges


def _equivalent(a: list[dict], b: list[dict], p: int = 0, q: int = 0) -> bool:
    """Exact equality of the languages of ``a`` from ``p`` and ``b`` from ``q`` (all states accept)."""
    seen, stack = {(p, q)}, [(p, q)]
    while stack:
        p, q = stack.pop()
        if sorted(a[p]) != sorted(b[q]):
            return False
        for c in a[p]:
            if (a[p][c], b[q][c]) not in seen:
                seen.add((a[p][c], b[q][c]))
                stack.append((a[p][c], b[q][c]))
    return True


def test_vocabulary_order():
    assert REGBENCH_VOCAB == ["."] + list("abcdefghijklmnopqr") + ["|"]


def test_registry_and_errors(tmp_path):
    assert "regbench" in hf_icl.list_tasks() and hf_icl.list_tasks() == sorted(hf_icl.list_tasks())
    with pytest.raises(ValueError, match="task='nope' is not one of: .*regbench"):
        hf_icl.load_task("nope")
    with pytest.raises(ValueError, match="'n_trian'.*allowed: n_train"):
        hf_icl.load_task("regbench", cache_dir=str(tmp_path), n_trian=3)
    with pytest.raises(ValueError, match="config_name='n7'"):
        hf_icl.load_task("regbench", cache_dir=str(tmp_path), config_name="n7")
    with pytest.raises(ValueError, match="min_states=4, max_states=3"):
        hf_icl.load_task("regbench", cache_dir=str(tmp_path), max_states=3)
    with pytest.raises(ValueError, match="min_edges=3"):
        hf_icl.load_task("regbench", cache_dir=str(tmp_path), min_edges=3, min_states=3)
    assert not any(tmp_path.iterdir()), "errors must be raised before any work"


def test_builder_splits_and_schema(tmp_path):
    ds = hf_icl.load_task("regbench", cache_dir=str(tmp_path), config_name="paper_ranges", **SMALL)
    assert {k: len(v) for k, v in ds.items()} == {"train": 12, "validation": 6, "test": 6}
    features = ds["train"].features
    assert features["num_states"] == datasets.Value("int32")
    assert features["transitions"].feature["symbol"] == datasets.Value("string")
    names = [c.name for c in hf_icl.tasks.regbench.RegBenchBuilder.BUILDER_CONFIGS]
    assert names == [f"n{n}" for n in (150, 500, 1000, 2500, 5000, 10000, 20000, 40000)] + ["paper_ranges"]
    paper = hf_icl.tasks.regbench.RegBenchBuilder.BUILDER_CONFIGS[-1]
    assert (paper.max_edges, paper.max_strings, paper.max_length, paper.n_train) == (4, 20, 50, 2500)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n_train=st.integers(0, 8), paper=st.booleans())
def test_generator_deterministic_and_well_formed(seed, n_train, paper):
    ranges = dict(max_edges=4, max_strings=20, max_length=50) if paper else {}
    cfg = _config(seed=seed, n_train=n_train, n_test=4, n_validation=3, **ranges)
    splits = generate_regbench(cfg)
    assert splits == generate_regbench(cfg)
    r = cfg.ranges
    for rows in splits.values():
        for row in rows:
            text = row["text"]
            assert set(text) <= set("abcdefghijklmnopqr|")
            strings = text.split("|")  # no leading/trailing/double '|' <=> no empty string
            assert r.min_strings <= len(strings) <= r.max_strings
            assert all(r.min_length <= len(s) <= r.max_length for s in strings)
            assert set(text) - {"|"} <= set(row["alphabet"])
            assert r.min_alphabet <= len(row["alphabet"]) <= r.max_alphabet
            assert 1 <= row["num_states"] <= r.max_states and row["start_state"] == 0
            truth = next_token_truth(row)  # raises if a string leaves the automaton
            nxt = [REGBENCH_VOCAB.index(c) for c in text[1:]]
            letters = np.array([c != "|" for c in text[1:]])
            assert (truth[np.arange(len(nxt)), nxt][letters] > 0).all()


def test_test_split_independent_of_n_train():
    a, b = (
        generate_regbench(_config(n_train=3, **{k: 5 for k in ("n_test", "n_validation")})),
        generate_regbench(_config(n_train=40, n_test=5, n_validation=5)),
    )
    assert a["test"] == b["test"] and a["validation"] == b["validation"]


def test_identical_bytes_across_hash_seeds():
    # the stub package skips hf_icl/__init__ (model registry: torch + transformers, ~6 s per process)
    code = (
        "import hashlib, importlib.util, json, sys, types;"
        "pkg = types.ModuleType('hf_icl');"
        "pkg.__path__ = list(importlib.util.find_spec('hf_icl').submodule_search_locations);"
        "sys.modules['hf_icl'] = pkg;"
        "from hf_icl.tasks.regbench import RegBenchConfig, generate_regbench;"
        "s = generate_regbench(RegBenchConfig(name='x', n_train=40, n_test=10, n_validation=10, seed=7));"
        "print(hashlib.sha256(json.dumps(s, sort_keys=True).encode()).hexdigest())"
    )
    digests = set()
    for hash_seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed, OMP_NUM_THREADS="1")
        digests.add(
            subprocess.run(
                [sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True
            ).stdout.strip()
        )
    here = generate_regbench(_config(n_train=40, n_test=10, n_validation=10, seed=7))
    digests.add(hashlib.sha256(json.dumps(here, sort_keys=True).encode()).hexdigest())
    assert len(digests) == 1


def test_minimise_hand_example():
    # 0 -a-> 1 -a-> 0 accepts a*: one state with a self-loop; 2 is unreachable and trimmed
    assert minimise(3, [{1: 1}, {1: 0}, {2: 0}]) == (1, ((0, 1, 0),))
    # 0 -a-> 1, 0 -b-> 2, 1 -c-> 3, 2 -c-> 3, 3 -a-> 1: states 1 and 2 merge
    assert minimise(4, [{1: 1, 2: 2}, {3: 3}, {3: 3}, {1: 1}]) == (
        3,
        ((0, 1, 1), (0, 2, 1), (1, 3, 2), (2, 1, 1)),
    )


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_minimise_preserves_language_and_is_minimal_and_canonical(seed):
    rng = np.random.default_rng(seed)
    n, _, k, syms, dsts = _draw_raw_batch(rng, SamplingRanges(max_states=7, max_alphabet=5), 8)
    for b in range(8):
        raw = [dict(zip((syms[b, q, : k[b, q]] + 1).tolist(), dsts[b, q, : k[b, q]].tolist())) for q in range(n[b])]
        m, transitions = minimise(int(n[b]), raw)
        small = _as_edges(m, transitions)
        assert _walks(raw, 6) == _walks(small, 6)  # bounded brute force
        assert _equivalent(raw, small)  # exact
        # minimal: no two states accept the same language
        assert not any(_equivalent(small, small, p, q) for p in range(m) for q in range(p))
        # canonical: any relabelling of the states (start stays 0) gives the same result
        perm = np.r_[0, 1 + rng.permutation(m - 1)] if m > 1 else np.array([0])
        relabelled = [{} for _ in range(m)]
        for src, c, dst in transitions:
            relabelled[perm[src]][c] = int(perm[dst])
        assert minimise(m, relabelled) == (m, transitions)


def test_splits_pairwise_non_isomorphic():
    splits = generate_regbench(_config(n_train=60, n_test=20, n_validation=20, max_states=5, max_alphabet=4))
    rows = [row for rows in splits.values() for row in rows]
    automata = [
        _as_edges(r["num_states"], [(t["src"], ord(t["symbol"]) - 96, t["dst"]) for t in r["transitions"]])
        for r in rows
    ]
    for i in range(len(automata)):
        for j in range(i):
            assert not _equivalent(automata[i], automata[j]), (i, j)


def test_next_token_truth_hand_example():
    row = {
        "text": "ac|ba",
        "start_state": 0,
        "transitions": [
            {"src": 0, "symbol": "a", "dst": 1},
            {"src": 0, "symbol": "b", "dst": 2},
            {"src": 1, "symbol": "c", "dst": 0},
            {"src": 2, "symbol": "a", "dst": 2},
        ],
    }
    expected = np.zeros((4, 20))
    expected[0, 3] = 1.0  # after "a": state 1, only c
    expected[1, [1, 2]] = 0.5  # after "ac": state 0 (next token is '|', truth unchanged)
    expected[2, [1, 2]] = 0.5  # after "ac|": start state
    expected[3, 1] = 1.0  # after "ac|b": state 2
    np.testing.assert_array_equal(next_token_truth(row), expected)
    with pytest.raises(ValueError, match="text\\[1\\]='b'"):
        next_token_truth({**row, "text": "abc"})


@pytest.fixture(scope="module")
def n2500(tmp_path_factory):
    return hf_icl.load_task("regbench", cache_dir=str(tmp_path_factory.mktemp("hf")), n_train=2500, seed=0)


def test_n2500_sizes_statistics_and_disjointness(n2500):
    assert {k: len(v) for k, v in n2500.items()} == {"train": 2500, "validation": 500, "test": 500}
    stats = instance_statistics([row for split in n2500.values() for row in split])
    assert 370 <= stats["mean_tokens"] <= 385
    assert 14.2 <= stats["mean_strings"] <= 14.8
    assert 6.7 <= stats["mean_states"] <= 7.1
    assert 0.034 <= stats["separator_share"] <= 0.038
    keys = {split: {_key(r) for r in rows} for split, rows in n2500.items()}
    assert len(keys["train"]) == 2500 and len(keys["test"]) == 500 and len(keys["validation"]) == 500
    assert not keys["train"] & keys["test"] and not keys["train"] & keys["validation"]
    assert not keys["test"] & keys["validation"]


def test_export_writes_hub_layout_loadable_offline(tmp_path, monkeypatch):
    import yaml

    from hf_icl.export import main as export_main

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    out, cache = tmp_path / "regbench", str(tmp_path / "cache")
    args = ["regbench", "--output", str(out), "--configs", "n150", "paper_ranges", "--cache-dir", cache]
    export_main(args + ["--n-train", "8", "--n-test", "4", "--n-validation", "4"])
    for config in ("n150", "paper_ranges"):
        for split in ("train", "validation", "test"):
            assert (out / config / f"{split}-00000-of-00001.parquet").is_file()
    readme = (out / "README.md").read_text()
    front = yaml.safe_load(readme.split("---")[1])
    assert [c["config_name"] for c in front["configs"]] == ["n150", "paper_ranges"]
    assert "## Statistics" in readme and "paper_ranges" in readme.split("---", 2)[2]
    loaded = datasets.load_dataset(str(out), "paper_ranges", cache_dir=cache)
    built = hf_icl.load_task(
        "regbench", cache_dir=cache, config_name="paper_ranges", n_train=8, n_test=4, n_validation=4
    )
    assert loaded["test"].features == built["test"].features
    assert loaded["train"].to_list() == built["train"].to_list()
    monkeypatch.chdir(tmp_path)  # "regbench" resolves to the folder from its parent directory
    assert datasets.load_dataset("regbench", "n150", split="validation", cache_dir=cache).num_rows == 4


@settings(max_examples=30, deadline=None)
@given(st.lists(st.text("abcdefghijklmnopqr", min_size=1, max_size=6), min_size=1, max_size=6), st.integers(0, 99))
def test_augmentation_relabels_letters_and_reorders_strings(strings, seed):
    """The oracle: undoing the drawn letter renaming gives the same multiset of strings; `|` stay delimiters."""
    import torch

    from hf_icl.tasks.regbench import regbench_tokenizer
    from hf_icl.tasks.regbench.spec import LETTERS, relabel_and_reorder

    tokenizer = regbench_tokenizer()
    letters, delimiter = tokenizer.convert_tokens_to_ids(list(LETTERS)), tokenizer.convert_tokens_to_ids("|")
    ids = tokenizer("|".join(strings))["input_ids"]
    out = relabel_and_reorder(ids, letters, delimiter, torch.Generator().manual_seed(seed))
    again = relabel_and_reorder(ids, letters, delimiter, torch.Generator().manual_seed(seed))
    assert out == again and len(out) == len(ids) and out.count(delimiter) == ids.count(delimiter)
    out_strings = tokenizer.decode(out).replace(" ", "").split("|")
    drawn = torch.randperm(len(letters), generator=torch.Generator().manual_seed(seed)).tolist()  # the same first draw
    relabel = {LETTERS[i]: LETTERS[j] for i, j in enumerate(drawn)}
    assert sorted("".join(relabel[c] for c in text) for text in strings) == sorted(out_strings)


def test_augmented_epochs_are_fresh_and_reproducible():
    from hf_icl.tasks import TaskRequest, family_of
    from hf_icl.training.data import Augmented

    request = TaskRequest("regbench", 100, 0, {"n_test": 8, "n_validation": 8}, {"augment": True})
    data = family_of("regbench").prepare_data(request)
    dataset = Augmented(data.train, data.augment, seed=3)
    first, again, next_epoch = dataset[(5, 0)], dataset[(5, 0)], dataset[(5, 1)]
    assert first == again and first["input_ids"] != next_epoch["input_ids"]
    assert first["input_ids"] != data.train[5]["input_ids"]  # a fresh draw, not the stored example
    assert len(first["input_ids"]) == len(data.train[5]["input_ids"]) and first["labels"] == first["input_ids"]
    plain = family_of("regbench").prepare_data(TaskRequest("regbench", 100, 0, {"n_test": 8, "n_validation": 8}, {}))
    assert plain.augment is None and plain.description["augment"] is False


def test_batching_choice_picks_the_sampler():
    from accelerate import Accelerator

    from hf_icl.tasks import TaskRequest, family_of
    from hf_icl.training.data import EpochBatches, EpochShuffleSampler, LengthGroupedEpochSampler

    data = family_of("regbench").prepare_data(TaskRequest("regbench", 100, 0, {"n_test": 8, "n_validation": 8}))
    samplers = {}
    for grouped in (True, False):
        loader = EpochBatches(Accelerator(cpu=True), data, 16, seed=0, grouped=grouped).loader
        samplers[grouped] = type(loader.batch_sampler.sampler)
        lengths = [len(row) for batch in loader for row in batch["input_ids"]]
        assert len(lengths) == 100
    assert samplers == {True: LengthGroupedEpochSampler, False: EpochShuffleSampler}
