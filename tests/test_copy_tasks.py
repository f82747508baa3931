"""Copying and retrieval tasks (P4 §3–4, P1 §3.3, zoology MQAR): exact formats against independent parsers,
determinism, unique lookups, the MQAR power law (chi-square), the n-gram copier's ambiguity signature, the lookup
oracle, errors, tokenizers and the Hub export."""

import dataclasses
import re

import datasets
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import hf_icl
from hf_icl.baselines.copying import LookupOracle, NGramCopier
from hf_icl.tasks import task_builder, task_entry
from hf_icl.tasks.generation import GENERATION_TASKS
from hf_icl.tasks.generation.copying import TASK_NAMES
from hf_icl.tasks.generation.copying_sampling import (
    duplicate_ngram,
    longest_repeat_with_different_successors,
    lookup_example,
    unique_key_positions,
)
from hf_icl.tasks.generation.recall import distinct_draws, gap_probabilities, mqar_arrays
from hf_icl.tasks.generation.tokenizers import COPY_SYMBOLS, MQAR_FIRST_CODE_POINT

SMALL = {
    "copy": dict(n_train=6, n_validation=5, n_per_length=4, test_max_length=60, context_len=120, train_max_length=20),
    "copy_dup_ngram": dict(n_train=3, n_validation=3, n_per_length=6),
    "lookup_suffix": dict(n_train=4, n_validation=5, n_per_length=4, test_max_length=50),
    "lookup_prefix": dict(n_train=4, n_validation=5, n_per_length=4, test_max_length=50, answer_length=0),
    "phonebook": dict(n_train=4, n_validation=3, n_per_length=2, test_max_entries=30),
    "associative_recall": dict(n_train=5, n_validation=3, n_test=5),
    "mqar": dict(n_train=5, n_validation=3, n_test=6, vocab_size=200, input_seq_len=64, num_kv_pairs=8),
}
SPLITS = ("train", "validation", "test")


def config_of(task, **overrides):
    return task_builder(task, **{**SMALL[task], **overrides}).config


def rows_of(task, split, **overrides):
    return list(task_entry(task).builder.iter_rows(config_of(task, **overrides), split))


# ---------------------------------------------------------------------------------- independent format parsers


def occurrences(s: str, g: str) -> list[int]:
    return [i for i in range(len(s) - len(g) + 1) if s[i : i + len(g)] == g]


def check_copy_example(text: str, task: str, config, ngram: int) -> tuple[str, str, str]:
    """Returns (prompt, answer, s) after checking the exact format of one example."""
    if task in ("copy", "copy_dup_ngram"):
        s, answer = re.fullmatch(r"\$([a-z]+)\|([a-z]+)\.", text).groups()
        assert answer == s
        if ngram:  # the planted repeat: two non-overlapping copies with different successors and predecessors
            n = ngram
            assert any(
                s[i : i + n] == s[j : j + n] and s[i + n] != s[j + n] and (i == 0 or s[i - 1] != s[j - 1])
                for i in range(len(s) - n)
                for j in range(i + n, len(s) - n)
            )
        return f"${s}|", answer, s
    if task == "lookup_suffix":
        s, rest = re.fullmatch(r"\$([a-z]+)\|([a-z]+)\.", text).groups()
        key, answer = rest[: config.ngram], rest[config.ngram :]
    else:
        key, s, answer = re.fullmatch(r"\$([a-z]+)\|([a-z]+)\|([a-z]+)\.", text).groups()
    assert len(key) == config.ngram and len(occurrences(s, key)) == 1, "the key must occur exactly once"
    follow = s[s.index(key) + len(key) :]
    assert answer == (follow[: config.answer_length] if config.answer_length else follow) and answer
    return text[: len(text) - len(answer) - 1], answer, s


@pytest.mark.parametrize("task", TASK_NAMES)
def test_copy_and_lookup_rows_follow_their_format(task):
    config = config_of(task)
    for split in SPLITS:
        for row in rows_of(task, split):
            text, spans = row["text"], list(zip(row["answer_starts"], row["answer_ends"]))
            starts = [m.start() for m in re.finditer(r"\$", text)]  # `$` only ever opens an example
            chunks = [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]
            complete = [chunk.endswith(".") for chunk in chunks]
            assert all(complete[:-1]) and sum(complete) == len(spans) >= 1
            if split == "train":  # packed: exactly context_len characters; a cut-off last example gets no span
                assert len(text) == config.context_len
                assert complete[-1] or re.fullmatch(r"\$[a-z|]*", chunks[-1])
            else:
                assert len(chunks) == 1 and complete[0]
            for k, (start, end) in enumerate(spans):
                n = row["ngrams"][k] if task == "copy_dup_ngram" and split == "test" else 0
                prompt, answer, s = check_copy_example(chunks[k], task, config, n)
                assert text[start:end] == answer and text[end] == "." and text[starts[k] : start] == prompt
                assert row["lengths"][k] == len(s)
                assert row["ngrams"][k] == (config.ngram if task.startswith("lookup") else n)
                if split != "test":
                    assert config.train_min_length <= len(s) <= config.train_max_length
    lengths = [r["lengths"][0] for r in rows_of(task, "test")]
    if task == "copy_dup_ngram":
        assert [r["ngrams"][0] for r in rows_of(task, "test")] == [n for n in range(1, 9) for _ in range(6)]
        assert set(lengths) <= {20, 30, 40, 50}
    else:
        assert lengths == [n for n in range(10, config.test_max_length + 1, 10) for _ in range(4)]


def test_phonebook_rows_follow_their_format():
    for split in SPLITS:
        for row in rows_of("phonebook", split):
            book, shots, query = row["text"].split("\n\n")
            lines = book.split("\n")
            assert all(re.fullmatch(r"[A-Z][a-z]+ [A-Z][a-z]+: [6-9]\d\d-\d\d\d-\d\d\d\d", line) for line in lines)
            names = [line.split(": ")[0] for line in lines]
            assert len(set(names)) == len(names) == row["lengths"][0]
            shot_lines = shots.split("\n")
            assert len(shot_lines) == 2 and set(shot_lines) <= set(lines)
            name, answer = re.fullmatch(r"([A-Za-z ]+): (\d{3}-\d{3}-\d{4})\.", query).groups()
            assert lines[names.index(name)] == f"{name}: {answer}" and f"{name}: {answer}" not in shot_lines
            start, end = row["answer_starts"][0], row["answer_ends"][0]
            assert row["text"][start:end] == answer and row["text"][end:] == "."


def test_associative_recall_rows_follow_their_format():
    for row in rows_of("associative_recall", "test") + rows_of("associative_recall", "train"):
        text = row["text"]
        assert len(text) == 382 + 3 and re.fullmatch(r"([a-s][A-S]){191}>[a-s][A-S]", text)
        pairs = [text[i : i + 2] for i in range(0, 382, 2)]
        mapping = dict(pairs)
        assert all(mapping[k] == v for k, v in pairs), "a key always has the same value within a sequence"
        assert text[-2] in mapping and text[-1] == mapping[text[-2]]
        assert row["answer_starts"] == [384] and row["answer_ends"] == [385] and row["lengths"] == [382]


def test_mqar_rows_follow_zoology():
    config = config_of("mqar")
    half, pairs = config.vocab_size // 2, config.num_kv_pairs
    for row in rows_of("mqar", "test"):
        ids = [ord(c) - MQAR_FIRST_CODE_POINT for c in row["text"]]
        keys, values = ids[0 : 2 * pairs : 2], ids[1 : 2 * pairs : 2]
        assert len(ids) == config.input_seq_len and all(0 <= i < config.vocab_size for i in ids)
        assert len(set(keys)) == pairs and all(1 <= k < half for k in keys)
        assert len(set(values)) == pairs and all(half <= v < config.vocab_size for v in values)
        queries = row["query_positions"]
        assert [ids[q] for q in queries] == keys, "key i is queried once, in order, at its own position"
        assert all(q >= 2 * pairs and (q - 2 * pairs) % 2 == 0 for q in queries) and len(set(queries)) == pairs
        assert [ord(a) - MQAR_FIRST_CODE_POINT for a in row["answers"]] == values


@pytest.mark.parametrize("task", sorted(GENERATION_TASKS))
def test_generation_is_deterministic_and_seeded(task):
    for split in SPLITS:
        assert rows_of(task, split) == rows_of(task, split)
    assert rows_of(task, "test") != rows_of(task, "test", seed=1)
    assert rows_of(task, "test") != rows_of(task, "train")


@pytest.mark.parametrize("task", ["copy", "lookup_suffix", "phonebook"])
def test_test_group_does_not_depend_on_other_settings(task):
    wide = rows_of(task, "test")
    last = wide[-1]["lengths"][0]
    field = "test_min_entries" if task == "phonebook" else "test_min_length"
    narrow = rows_of(task, "test", **{field: last, "n_train": 1})
    assert narrow == [r for r in wide if r["lengths"][0] == last]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 6), st.integers(0, 20), st.integers(2, 26))
def test_duplicate_ngram_plants_exactly_one_ambiguous_repeat_of_length_n(seed, n, extra, alphabet_size):
    s = duplicate_ngram(np.random.default_rng(seed), 2 * n + 1 + extra, n, alphabet_size)
    assert len(s) == 2 * n + 1 + extra and set(s) <= set("abcdefghijklmnopqrstuvwxyz"[:alphabet_size])
    assert brute_force_ambiguity(s) >= n, "an n-gram copier cannot copy it"
    check_copy_example(f"${s}|{s}.", "copy_dup_ngram", None, n)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["lookup_suffix", "lookup_prefix"]), st.integers(1, 4),
       st.integers(0, 3), st.integers(0, 30))  # fmt: skip
def test_lookup_example_has_a_unique_key(seed, task, n, answer_length, extra):
    config = dataclasses.replace(config_of(task), ngram=n, answer_length=answer_length)
    try:
        example = lookup_example(np.random.default_rng(seed), task, n + max(answer_length, 1) + extra, n, answer_length)
    except LookupError:
        return  # this string had no unique key; the builder draws another
    prompt, answer, s = check_copy_example(example.text, task, config, 0)
    assert example.text[example.answer_start : example.answer_end] == answer and example.length == len(s)


def test_distinct_draws_are_uniform_in_both_regimes():
    rng = np.random.default_rng(0)
    for low, high, k in ((1, 10, 8), (1, 200, 3)):  # permutation regime, rejection regime
        draws = distinct_draws(rng, 20000, low, high, k)
        assert draws.shape == (20000, k) and draws.min() >= low and draws.max() < high
        assert all(len(set(row)) == k for row in draws[:2000].tolist())
        for column in (0, k - 1):
            assert chi_square_p(draws[:, column] - low, np.full(high - low, 1 / (high - low))) > 1e-3


# ------------------------------------------------------------------------------------------- MQAR power law


def chi_square_p(observed_values: np.ndarray, probabilities: np.ndarray) -> float:
    """Chi-square goodness of fit, merging the tail cells so every expected count is at least 5."""
    observed = np.bincount(observed_values, minlength=len(probabilities)).astype(float)
    expected = probabilities * len(observed_values)
    keep = np.flatnonzero(np.cumsum(expected[::-1])[::-1] >= 5)[-1]  # last cell whose tail mass is >= 5
    observed = np.append(observed[:keep], observed[keep:].sum())
    expected = np.append(expected[:keep], expected[keep:].sum())
    return stats.chisquare(observed, expected).pvalue


def test_mqar_query_gaps_follow_the_power_law():
    config = dataclasses.replace(config_of("mqar"), input_seq_len=128, num_kv_pairs=8, vocab_size=1024)
    _, positions, _ = mqar_arrays(np.random.default_rng(0), 20000, config)
    gaps = (positions - 2 * config.num_kv_pairs) // 2  # 0-based gap indices
    target = gap_probabilities((128 - 16) // 2, 0.01)
    assert chi_square_p(gaps[:, 0], target) > 1e-3, "the first key's gap is one draw from p"
    uniform = dataclasses.replace(config, power_a=1.0)
    _, other, _ = mqar_arrays(np.random.default_rng(0), 20000, uniform)
    assert chi_square_p((other[:, 0] - 16) // 2, target) < 1e-12, "the test rejects a different law"
    assert chi_square_p((other[:, 0] - 16) // 2, gap_probabilities(56, 1.0)) > 1e-3


def test_mqar_gap_pairs_follow_sampling_without_replacement():
    config = dataclasses.replace(config_of("mqar"), input_seq_len=16, num_kv_pairs=2, vocab_size=64)
    _, positions, _ = mqar_arrays(np.random.default_rng(1), 30000, config)
    first, second = ((positions - 4) // 2).T
    p = gap_probabilities(6, 0.01)
    joint = p[:, None] * p[None, :] / (1 - p[:, None])  # P(g1 = a, g2 = b) for a != b
    off_diagonal = ~np.eye(6, dtype=bool)
    assert not (first == second).any()
    cells = np.cumsum(off_diagonal.ravel())[first * 6 + second] - 1  # index among the 30 off-diagonal cells
    order = np.argsort(-joint[off_diagonal])  # most likely cells first, so only the rare tail gets merged
    rank = np.empty(30, dtype=int)
    rank[order] = np.arange(30)
    assert chi_square_p(rank[cells], joint[off_diagonal][order]) > 1e-3


# ------------------------------------------------------------------------- n-gram copier and lookup oracle


def brute_force_ambiguity(s: str) -> int:
    return max([n for n in range(1, len(s)) for i in range(len(s) - n) for j in range(i + 1, len(s) - n)
                if s[i : i + n] == s[j : j + n] and s[i + n] != s[j + n]], default=0)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="abc", min_size=1, max_size=14), st.integers(1, 6))
def test_ngram_copier_is_exact_iff_no_ambiguous_ngram(s, n):
    assert longest_repeat_with_different_successors(s) == brute_force_ambiguity(s)
    assert (NGramCopier(n).copy(s) == s) == (brute_force_ambiguity(s) < n)


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="ab", min_size=1, max_size=12), st.integers(1, 4), st.integers(0, 3))
def test_unique_key_positions_brute_force(s, n, answer_length):
    expected = [p for p in range(len(s) - n - max(answer_length, 1) + 1) if len(occurrences(s, s[p : p + n])) == 1]
    assert unique_key_positions(s, n, answer_length) == expected


def test_copier_accuracy_on_duplicated_ngrams_drops_where_ambiguity_says():
    from hf_icl.tasks.generation.evaluation import evaluate_generation

    config = config_of("copy_dup_ngram", n_per_length=40)
    rows = list(task_entry("copy_dup_ngram").builder.iter_rows(config, "test"))
    results = evaluate_generation("copy_dup_ngram", None, None, rows, config)
    ambiguity = {m: [brute_force_ambiguity(r["text"][1 : r["text"].index("|")]) for r in rows if r["ngrams"][0] == m]
                 for m in range(1, 9)}  # fmt: skip
    for n in range(1, 9):
        curve = results["baseline_curves"][f"{n}-gram copier"]
        for m in range(1, 9):
            expected = np.mean([a < n for a in ambiguity[m]])
            assert curve[str(m)] == pytest.approx(expected)
            if n <= m:
                assert curve[str(m)] == 0.0, "a copier no longer than the duplicate always fails"
    assert results["baseline_curves"]["8-gram copier"]["1"] > 0.9
    assert results["baselines"]["lookup oracle"]["string_accuracy"] == 1.0


@pytest.mark.parametrize("task", sorted(GENERATION_TASKS))
def test_lookup_oracle_finds_every_answer(task):
    spec, config = GENERATION_TASKS[task], config_of(task)
    oracle = LookupOracle(task_entry(task).solver, spec.eos, getattr(config, "answer_length", 0))
    for split in SPLITS:
        queries = [q for row in rows_of(task, split) for q in spec.queries(row)]
        expected = [q.answer + ("." if q.eos else "") for q in queries]
        assert oracle.generate([q.prompt for q in queries], 10**6) == expected


# ----------------------------------------------------------------------------- tokenizers, errors, export


@pytest.mark.parametrize("task", sorted(GENERATION_TASKS))
def test_tokenizer_is_one_token_per_character(task):
    config = config_of(task)
    tokenizer = GENERATION_TASKS[task].tokenizer(config)
    for row in rows_of(task, "test")[:3] + rows_of(task, "train")[:1]:
        ids = tokenizer(row["text"])["input_ids"]
        assert len(ids) == len(row["text"]) and tokenizer.decode(ids) == row["text"]
    assert tokenizer.pad_token is not None and tokenizer.eos_token == "."
    if task == "mqar":
        assert tokenizer(chr(MQAR_FIRST_CODE_POINT + 7))["input_ids"] == [7] and len(tokenizer) == 201
    if task == "copy":
        assert tokenizer.convert_tokens_to_ids(COPY_SYMBOLS) == list(range(30)) and tokenizer.bos_token == "$"


@pytest.mark.parametrize(
    "task, overrides, message",
    [
        ("copy", dict(context_len=50), "context_len=50 is not allowed: the longest training example"),
        ("copy", dict(alphabet_size=27), "alphabet_size=27 is not allowed"),
        ("copy", dict(train_min_length=5, train_max_length=3), "train_min_length=5, train_max_length=3"),
        ("copy_dup_ngram", dict(test_min_length=10), r"test_min_length=10, test_max_length=50 .* need 17 <= min"),
        ("lookup_suffix", dict(ngram=0), "ngram=0 is not allowed for lookup_suffix"),
        ("lookup_prefix", dict(train_min_length=4), r"train_min_length=4, train_max_length=30 .* need 6 <= min"),
        ("phonebook", dict(shots=3, train_min_entries=3), r"train_min_entries=3, .* need 4 <= min"),
        ("mqar", dict(vocab_size=64, input_seq_len=64), "vocab_size=64 is not allowed: zoology needs vocab_size >"),
        ("mqar", dict(num_kv_pairs=17), "num_kv_pairs=17 is not allowed"),
        ("mqar", dict(input_seq_len=63), "input_seq_len=63 is not allowed: expected an even integer"),
        ("mqar", dict(power_a=0), "power_a=0 is not allowed"),
    ],
)
def test_invalid_configs_fail_before_any_work(task, overrides, message, tmp_path):
    with pytest.raises(ValueError, match=message):
        hf_icl.load_task(task, cache_dir=str(tmp_path), **overrides)
    assert not any(tmp_path.iterdir())
    with pytest.raises(ValueError, match="override 'ngram' is not a field of task 'copy'"):
        hf_icl.load_task("copy", cache_dir=str(tmp_path), ngram=3)


def test_export_writes_hub_layout_loadable_offline(tmp_path):
    from hf_icl.export import export_targets
    from hf_icl.export import main as export_main

    export, _ = export_targets()["copying"]
    assert set(export.configs) == set(GENERATION_TASKS)
    out, cache = tmp_path / "copying", str(tmp_path / "cache")
    sizes = ["--n-train", "3", "--n-validation", "2", "--n-per-length", "2", "--n-test", "4", "--test-max-length", "40"]
    export_main(["copying", "--output", str(out), "--configs", "copy", "mqar", "--cache-dir", cache] + sizes)
    readme = (out / "README.md").read_text()
    assert "## Statistics" in readme and "| mqar | test | 4 | 32 | 1–1 | 64–64" in readme
    for name, options in (("copy", dict(n_per_length=2, test_max_length=40)), ("mqar", dict(n_test=4))):
        loaded = datasets.load_dataset(str(out), name, cache_dir=cache)
        built = hf_icl.load_task(name, cache_dir=cache, n_train=3, n_validation=2, **options)
        assert loaded["test"].features == built["test"].features
        for split in SPLITS:
            assert loaded[split].to_list() == built[split].to_list()
