"""Regular-language suite (P2 §5.1, §5.3; DESIGN §5.4): labels against brute-force oracles, uniform exact-length
sampling, balance, determinism, registry errors and the Hub export."""

import dataclasses
import hashlib
import itertools
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
from hf_icl.tasks.formal_language import FORMAL_LANGUAGE_SYMBOLS, formal_language_tokenizer
from hf_icl.tasks.formal_language.languages import RECOGNITION_LANGUAGES, ExactLengthSampler
from hf_icl.tasks.formal_language.regular_languages import (
    LANGUAGES,
    RegularLanguageBuilder,
    RegularLanguageConfig,
    causal_lm_example,
    generate_split,
)

SMALL = dict(n_train=60, n_validation=20, n_per_length=8)
SPLITS = ("train", "validation", "test")


# ----------------------------------------------------------------------------- independent reference oracles


def even_pairs(s: str) -> int:
    return sum(a != b for a, b in zip(s, s[1:])) % 2


def parity(s: str) -> int:
    return s.count("1") % 2


def cycle_navigation(s: str) -> int:
    return sum({"0": -1, "1": 0, "2": 1}[c] for c in s) % 5


def modular_arithmetic(s: str) -> int:
    return eval(s, {"__builtins__": {}}) % 5  # Python integers: * before +/-, left-associative, then a residue


def dyck(depth: int):
    def member(s: str) -> bool:
        level = 0
        for c in s:
            level += 1 if c == "0" else -1
            if not 0 <= level <= depth:
                return False
        return level == 0

    return member


def tomita_3(s: str) -> bool:
    runs = [(c, len(list(g))) for c, g in itertools.groupby(s)]
    return not any(a == "1" and m % 2 and b == "0" and n % 2 for (a, m), (b, n) in zip(runs, runs[1:]))


MEMBERSHIP = {
    "dyck_2": dyck(2),
    "dyck_3": dyck(3),
    "dyck_4": dyck(4),
    "dyck_12": dyck(12),
    "tomita_3": tomita_3,
    "tomita_4": lambda s: "000" not in s,
    "tomita_5": lambda s: s.count("0") % 2 == 0 and s.count("1") % 2 == 0,
    "tomita_6": lambda s: (s.count("0") - s.count("1")) % 3 == 0,
}
TRANSDUCTION = {
    "even_pairs": (even_pairs, "01"),
    "parity_check": (parity, "01"),
    "cycle_navigation": (cycle_navigation, "012"),
    "modular_arithmetic": (modular_arithmetic, "01234+-*"),
    "parity_p": (parity, "01"),
}


def oracle_answer(language: str, s: str) -> str:
    if language in MEMBERSHIP:
        return str(int(MEMBERSHIP[language](s)))
    return str(TRANSDUCTION[language][0](s))


def all_strings(length: int):
    return ("".join(bits) for bits in itertools.product("01", repeat=length))


def both_class_lengths(language: str, lo: int, hi: int) -> list[int]:
    out = []
    for n in range(lo, hi + 1):
        seen = set()
        for s in all_strings(n):
            seen.add(MEMBERSHIP[language](s))
            if len(seen) == 2:
                out.append(n)
                break
    return out


def small_config(language: str, **kwargs) -> RegularLanguageConfig:
    base = next(c for c in RegularLanguageBuilder.BUILDER_CONFIGS if c.name == language)
    lengths = dict(train_min_length=1, train_max_length=10, test_min_length=11, test_max_length=16)
    return dataclasses.replace(base, **{**SMALL, **lengths, **kwargs})


# ------------------------------------------------------------------------------------------------------ tests


def test_oracles_hand_cases():
    assert [even_pairs(s) for s in ("0", "01", "0110", "0111")] == [0, 1, 0, 1]
    assert [cycle_navigation(s) for s in ("0", "22222", "2221")] == [4, 0, 3]
    assert [modular_arithmetic(s) for s in ("3", "1-4", "2+3*4", "4-2-1", "2*3-4*4+1")] == [3, 2, 4, 1, 1]
    assert [tomita_3(s) for s in ("10", "1100", "100", "1101", "01110001")] == [False, True, True, True, False]
    assert [dyck(2)(s) for s in ("01", "0011", "000111", "10", "0")] == [True, True, False, False, False]


def test_tokenizer_ids_and_round_trip():
    tokenizer = formal_language_tokenizer()
    assert FORMAL_LANGUAGE_SYMBOLS == [".", "0", "1", "2", "3", "4", "+", "-", "*", "?"]
    assert tokenizer.convert_tokens_to_ids(FORMAL_LANGUAGE_SYMBOLS) == list(range(10))
    assert tokenizer.pad_token_id == 0 and tokenizer.eos_token == "."
    text, query = causal_lm_example({"input": "3+4*2", "answer": "1", "length": 5})
    assert (text, query) == ("3+4*2?1", 5)
    ids = tokenizer(text)["input_ids"]
    assert ids == [4, 6, 5, 8, 3, 9, 2] and ids[query] == 9
    assert tokenizer.decode(ids) == text


@pytest.mark.parametrize("language", LANGUAGES)
def test_labels_match_oracles_and_rows_are_well_formed(language):
    config = small_config(language, n_train=200, n_validation=40)
    splits = {split: generate_split(config, split) for split in SPLITS}
    alphabet = set(TRANSDUCTION[language][1] if language in TRANSDUCTION else "01")
    for split, rows in splits.items():
        for text, answer, length in zip(rows["input"], rows["answer"], rows["length"]):
            assert len(text) == length >= 1 and set(text) <= alphabet
            assert answer == oracle_answer(language, text), (split, text)
            text_lm, query = causal_lm_example({"input": text, "answer": answer})
            assert text_lm[:query] == text and text_lm[query:] == "?" + answer
            assert set(text_lm) <= set(FORMAL_LANGUAGE_SYMBOLS)
            if language == "modular_arithmetic":
                assert length % 2 == 1
                assert set(text[0::2]) <= set("01234") and set(text[1::2]) <= set("+-*")
    lengths = sorted(set(splits["test"]["length"]))
    if language in MEMBERSHIP:
        assert lengths == both_class_lengths(language, 11, 16)
        assert set(splits["train"]["length"]) == set(both_class_lengths(language, 1, 10))
        for split in ("train", "validation"):
            assert splits[split]["answer"].count("1") == len(splits[split]["answer"]) // 2  # balanced
        answers = np.array(splits["test"]["answer"]).reshape(len(lengths), 8)  # rows grouped by length
        assert ((answers == "1").sum(axis=1) == 4).all()  # balanced per length
    else:
        assert lengths == [n for n in range(11, 17) if n % 2 or language != "modular_arithmetic"]
        assert np.bincount(splits["test"]["length"])[lengths].tolist() == [8] * len(lengths)


def test_skipped_recognition_lengths_with_default_ranges():
    expected_first = {"dyck_2": 2, "tomita_3": 2, "tomita_4": 3, "tomita_5": 2, "tomita_6": 2}
    for language, first in expected_first.items():
        config = next(c for c in RegularLanguageBuilder.BUILDER_CONFIGS if c.name == language)
        sampler = ExactLengthSampler(RECOGNITION_LANGUAGES[language], 100)
        assert sampler.lengths_with_both_classes(1, 50)[0] == first
        if language in ("dyck_2", "tomita_5"):  # odd lengths have no members
            assert sampler.lengths_with_both_classes(51, 100) == list(range(52, 101, 2))
        assert (config.train_max_length, config.test_min_length, config.test_max_length) == (50, 51, 100)


@pytest.mark.parametrize("language", sorted(RECOGNITION_LANGUAGES))
def test_exact_counts_and_uniform_sampling(language):
    member = MEMBERSHIP[language]
    sampler = ExactLengthSampler(RECOGNITION_LANGUAGES[language], 10)
    for n in range(11):
        members = sum(member(s) for s in all_strings(n))
        assert (sampler.count(n, True), sampler.count(n, False)) == (members, 2**n - members)
    rng = np.random.default_rng(0)
    length, draws = 8, 6000
    for inside in (True, False):
        support = [s for s in all_strings(length) if member(s) == inside]
        x = sampler.sample(rng, length, draws, inside)
        counts = {}
        for s in ("".join(map(str, row)) for row in x.tolist()):
            assert member(s) == inside
            counts[s] = counts.get(s, 0) + 1
        observed = np.array([counts.get(s, 0) for s in support])
        expected = draws / len(support)
        chi2, dof = ((observed - expected) ** 2 / expected).sum(), len(support) - 1
        assert chi2 < dof + 6 * np.sqrt(2 * max(dof, 1)) + 10, (inside, chi2, dof)  # loose: mean dof, sd sqrt(2 dof)
        if expected >= 20:
            assert (observed > 0).all()


def test_parity_p_bias():
    for p in (0.1, 0.9):
        rows = generate_split(small_config("parity_p", p_one=p, n_train=400), "train")
        ones = sum(s.count("1") for s in rows["input"]) / sum(rows["length"])
        assert abs(ones - p) < 0.03


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    language=st.sampled_from(LANGUAGES),
    n_train=st.integers(0, 30),
    test_min=st.integers(2, 12),
)
def test_generation_deterministic_and_test_rows_independent(seed, language, n_train, test_min):
    config = small_config(language, seed=seed, n_train=n_train, n_per_length=4, test_min_length=test_min)
    for split in SPLITS:
        assert generate_split(config, split) == generate_split(config, split)
    assert len(generate_split(config, "train")["input"]) == n_train
    wide = generate_split(config, "test")
    longest = max(wide["length"])
    narrowed = generate_split(dataclasses.replace(config, n_train=3, test_min_length=longest), "test")
    at_max = [i for i, n in enumerate(wide["length"]) if n == longest]
    assert [wide["input"][i] for i in at_max] == narrowed["input"]
    assert [wide["answer"][i] for i in at_max] == narrowed["answer"]


_DIGEST = """
import dataclasses, hashlib, json
from hf_icl.tasks.formal_language.regular_languages import RegularLanguageBuilder, generate_split
out = {}
for config in RegularLanguageBuilder.BUILDER_CONFIGS:
    small = dataclasses.replace(config, n_train=30, n_validation=5, n_per_length=4,
                                test_max_length=config.test_min_length + 6)
    out[config.name] = [generate_split(small, split) for split in ("train", "validation", "test")]
digest = hashlib.sha256(json.dumps(out, sort_keys=True).encode()).hexdigest()
"""


def test_identical_bytes_across_hash_seeds():
    stub = (  # skips hf_icl/__init__ (torch + transformers, ~6 s per process)
        "import importlib.util, sys, types\n"
        "pkg = types.ModuleType('hf_icl')\n"
        "pkg.__path__ = list(importlib.util.find_spec('hf_icl').submodule_search_locations)\n"
        "sys.modules['hf_icl'] = pkg\n"
    )
    digests = set()
    for hash_seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed, OMP_NUM_THREADS="1")
        code = stub + _DIGEST + "print(digest)"
        out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True)
        digests.add(out.stdout.strip())
    here = {}
    exec(_DIGEST, here)
    digests.add(here["digest"])
    assert len(digests) == 1


def test_registry_and_errors(tmp_path):
    assert set(LANGUAGES) | {"regbench"} <= set(hf_icl.list_tasks())
    assert {name for name in hf_icl.list_tasks() if hf_icl.tasks.task_family(name) == "formal_language"} == set(
        LANGUAGES
    )
    assert hf_icl.tasks.task_option_fields("parity_p")[-2:] == ("p_one", "online")  # the builder's, then the family's
    assert "p_one" not in hf_icl.tasks.task_option_fields("parity_check")
    cache = str(tmp_path)
    with pytest.raises(ValueError, match="override 'p_one' is not a field of task 'even_pairs'; allowed: n_train"):
        hf_icl.load_task("even_pairs", cache_dir=cache, p_one=0.3)
    with pytest.raises(ValueError, match="config_name='dyck_3' is not one of: dyck_2"):
        hf_icl.load_task("dyck_2", cache_dir=cache, config_name="dyck_3")
    with pytest.raises(ValueError, match="train_min_length=5, train_max_length=3 are not allowed: need 1 <= min"):
        hf_icl.load_task("parity_check", cache_dir=cache, train_min_length=5, train_max_length=3)
    with pytest.raises(ValueError, match="test_min_length=0, test_max_length=100"):
        hf_icl.load_task("tomita_4", cache_dir=cache, test_min_length=0)
    with pytest.raises(ValueError, match="train_min_length=2, train_max_length=2 .* modular_arithmetic"):
        hf_icl.load_task("modular_arithmetic", cache_dir=cache, train_min_length=2, train_max_length=2)
    with pytest.raises(ValueError, match="test_min_length=51, test_max_length=51 .* tomita_5"):
        hf_icl.load_task("tomita_5", cache_dir=cache, test_max_length=51)
    with pytest.raises(ValueError, match=r"p_one=1.5 is not allowed: expected a probability in \(0, 1\)"):
        hf_icl.load_task("parity_p", cache_dir=cache, p_one=1.5)
    with pytest.raises(ValueError, match="n_train=-1 is not allowed"):
        hf_icl.load_task("cycle_navigation", cache_dir=cache, n_train=-1)
    with pytest.raises(ValueError, match="p_one=0.5 is not allowed for language='dyck_2'"):
        RegularLanguageBuilder(config_name="dyck_2", cache_dir=cache, p_one=0.5)
    assert not any(tmp_path.iterdir()), "errors must be raised before any work"


def test_load_task_splits_and_schema(tmp_path):
    ds = hf_icl.load_task("parity_p", cache_dir=str(tmp_path), p_one=0.3, test_max_length=44, **SMALL)
    assert {k: len(v) for k, v in ds.items()} == {"train": 60, "validation": 20, "test": 32}
    assert ds["test"].features["length"] == datasets.Value("int32")
    assert ds["train"].features["answer"] == datasets.Value("string")
    assert sorted(set(ds["test"]["length"])) == [41, 42, 43, 44] and max(ds["train"]["length"]) <= 40
    dyck = hf_icl.load_task("dyck_12", cache_dir=str(tmp_path), test_max_length=56, **SMALL)
    assert sorted(set(dyck["test"]["length"])) == [52, 54, 56]


def test_export_writes_hub_layout_loadable_offline(tmp_path, monkeypatch):
    import yaml

    from hf_icl.export import export_targets
    from hf_icl.export import main as export_main

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    export, _ = export_targets()["formal_languages"]
    assert set(export.configs) == (set(LANGUAGES) - {"parity_p"}) | {f"parity_p{p}" for p in (10, 30, 50, 70, 90)}
    assert export.configs_of("parity_p") == [f"parity_p{p}" for p in (10, 30, 50, 70, 90)]
    out, cache = tmp_path / "formal_languages", str(tmp_path / "cache")
    sizes = ["--n-train", "8", "--n-validation", "4", "--n-per-length", "2", "--test-max-length", "56"]
    configs = ["--configs", "tomita_6", "parity_p10"]
    export_main(["formal_languages", "--output", str(out), *configs, "--cache-dir", cache] + sizes)
    readme = (out / "README.md").read_text()
    front = yaml.safe_load(readme.split("---")[1])
    assert [c["config_name"] for c in front["configs"]] == ["tomita_6", "parity_p10"]
    assert "## Statistics" in readme and "P(1) = 0.1" in readme
    loaded = datasets.load_dataset(str(out), "parity_p10", cache_dir=cache)
    built = hf_icl.load_task(
        "parity_p", cache_dir=cache, p_one=0.1, n_train=8, n_validation=4, n_per_length=2, test_max_length=56
    )
    assert loaded["test"].features == built["test"].features
    for split in SPLITS:
        assert loaded[split].to_list() == built[split].to_list()
    digest = hashlib.sha256(json.dumps(loaded["test"].to_list()).encode()).hexdigest()
    assert digest == hashlib.sha256(json.dumps(built["test"].to_list()).encode()).hexdigest()
    tomita = datasets.load_dataset(str(out), "tomita_6", split="test", cache_dir=cache)
    assert tomita.num_rows == 2 * 6 and all(
        a == oracle_answer("tomita_6", s) for s, a in zip(tomita["input"], tomita["answer"])
    )
