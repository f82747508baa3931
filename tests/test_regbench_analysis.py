"""Oracles of the RegBench analyses (P1 §5; issue #14): probe targets against brute-force counts, automaton
annotations, the n-gram-head signature and pairwise TVD against hand-computed values, and each command end to end
on a tiny random-init Transformer."""

import argparse
import json

import numpy as np
import pytest
from transformers import AutoModelForCausalLM

import hf_icl
from hf_icl.analysis import attention, pairwise_tvd, probes
from hf_icl.analysis import regbench_common as common
from hf_icl.analysis.__main__ import main
from hf_icl.evaluation import regbench_metrics
from hf_icl.evaluation.next_token import model_next_token_probs
from hf_icl.tasks.regbench import REGBENCH_VOCAB as symbols
from hf_icl.tasks.regbench import automaton_states, regbench_tokenizer

ROW = {  # 0 -a-> 1, 0 -b-> 2, 1 -c-> 0, 2 -a-> 2
    "text": "ac|baa",
    "start_state": 0,
    "num_states": 3,
    "transitions": [
        {"src": 0, "symbol": "a", "dst": 1},
        {"src": 0, "symbol": "b", "dst": 2},
        {"src": 1, "symbol": "c", "dst": 0},
        {"src": 2, "symbol": "a", "dst": 2},
    ],
}
TASK_OPTIONS = {"n_test": 6, "n_validation": 2, "min_strings": 3, "max_strings": 4, "max_length": 12}


def brute_force_counts(text: str, i: int, gram: str) -> tuple[int, int]:
    """count(gram) in text[: i + 1] and the number of its context's occurrences followed by a token there."""
    prefix, n = text[: i + 1], len(gram)
    count = sum(prefix[j - n + 1 : j + 1] == gram for j in range(n - 1, len(prefix)))
    total = sum(prefix[j - n + 1 : j] == gram[:-1] for j in range(n - 1, len(prefix)))
    return count, total


def test_probe_targets_match_hand_counts():
    text = "abcab|abb"
    tokens = common.token_ids(text)
    hand = {  # (i, gram): (count, occurrences of the context followed by a token, up to i)
        (4, "b"): (2, 5),
        (6, "ab"): (2, 2),  # a·b at 0–1 and 3–4; the a at 6 is not yet followed
        (7, "bc"): (1, 2),  # b is followed by c (1) and | (4)
        (7, "abc"): (1, 2),
        (7, "ab|"): (1, 2),
        (8, "bb"): (1, 3),
    }
    for (i, gram), expected in hand.items():
        assert probes.ngram_counts(tokens, i, common.token_ids(gram)) == expected
        assert brute_force_counts(text, i, gram) == expected


def test_sampled_probe_queries_match_brute_force():
    rng = np.random.default_rng(0)
    letters = "abcd|"
    text = "".join(rng.choice(list(letters), size=80))
    tokens = common.token_ids(text)
    for n in (1, 2, 3):
        regression = probes.sample_ngram_queries(tokens, n, 30, rng, min_position=5, existence=False)
        assert len(regression) == 30
        for i, gram, target in regression:
            context = "".join(symbols[t] for t in gram)
            assert gram[:-1].tolist() == tokens[i - n + 2 : i + 1].tolist()
            assert target == brute_force_counts(text, i, context) and target[0] >= 1
        existence = probes.sample_ngram_queries(tokens, n, 40, rng, min_position=5, existence=True)
        labels = [target for _, _, target in existence]
        for i, gram, target in existence:
            assert target == int(brute_force_counts(text, i, "".join(symbols[t] for t in gram))[0] > 0)
        assert 0 < sum(labels) < len(labels)


def test_state_pairs_are_balanced_and_skip_separators():
    row = {**ROW, "text": "ac|baa|acbaa"}
    states, tokens = automaton_states(row), common.token_ids(row["text"])
    pairs = probes.sample_state_pairs(states, tokens, 40, np.random.default_rng(1))
    assert sum(same for _, _, same in pairs) == 20
    for i, j, same in pairs:
        assert i != j and row["text"][i] != "|" and row["text"][j] != "|"
        assert same == int(states[i] == states[j])


def test_attention_axis_labels_follow_the_automaton():
    assert automaton_states(ROW).tolist() == [1, 0, 0, 2, 2, 2]
    assert attention.axis_labels(ROW) == ["a·1", "c·0", "|·0", "b·2", "a·2", "a·2"]
    with pytest.raises(ValueError, match="text\\[1\\]='b'"):
        automaton_states({**ROW, "text": "ab"})


def test_ngram_signature_on_a_hand_built_attention_matrix():
    tokens = common.token_ids("abab")
    follows_1 = attention.follows_kgram_mask(tokens, 1)
    assert np.argwhere(follows_1).tolist() == [[2, 1], [3, 2]]  # keys right after an earlier a (i = 2), b (i = 3)
    assert np.argwhere(attention.follows_kgram_mask(tokens, 2)).tolist() == [[3, 2]]  # after "ab"
    assert not attention.follows_kgram_mask(tokens, 3).any()
    weights = np.array([[[1.0, 0, 0, 0], [0.5, 0.5, 0, 0], [0.2, 0.5, 0.3, 0], [0.1, 0.2, 0.6, 0.1]]])  # (H = 1, T, T)
    mass, queries, uniform = attention.masked_mass(weights, follows_1)
    np.testing.assert_allclose(mass, [0.5 + 0.6])
    assert queries == 2
    assert uniform == pytest.approx(1 / 3 + 1 / 4)
    mass, queries, _ = attention.masked_mass(weights, attention.previous_token_mask(4))
    np.testing.assert_allclose(mass, [0.5 + 0.5 + 0.6])
    assert queries == 3
    mass, queries, uniform = attention.masked_mass(weights, np.eye(4, dtype=bool))
    np.testing.assert_allclose(mass, [1.0 + 0.5 + 0.3 + 0.1])
    assert (queries, uniform) == (4, pytest.approx(1 + 1 / 2 + 1 / 3 + 1 / 4))
    states = automaton_states(ROW)  # [1, 0, 0, 2, 2, 2]; x_j is emitted from states[j − 1]
    assert np.argwhere(attention.same_state_mask(states)).tolist() == [[2, 2], [4, 4], [5, 4], [5, 5]]


def test_pairwise_tvd_hand_values():
    predictions = {
        "p": [np.array([[1.0, 0.0], [0.5, 0.5]]), np.array([[0.2, 0.8]])],
        "q": [np.array([[0.0, 1.0], [0.5, 0.5]]), np.array([[0.6, 0.4]])],
        "r": [np.array([[1.0, 0.0], [0.5, 0.5]]), np.array([[0.2, 0.8]])],
    }
    matrix = pairwise_tvd.pairwise_tvd(predictions)
    np.testing.assert_allclose(matrix, matrix.T)
    np.testing.assert_allclose(np.diag(matrix), 0)
    assert matrix[0, 1] == pytest.approx((1.0 + 0.0 + 0.4) / 3)  # micro-average over the three positions
    assert matrix[0, 2] == 0
    assert pairwise_tvd.pairwise_tvd(predictions, max_positions=1)[0, 1] == pytest.approx((1.0 + 0.4) / 2)


def save_tiny(folder, architecture="transformer"):
    config = hf_icl.config_for(architecture, "tiny", vocab_size=20)
    model = AutoModelForCausalLM.from_config(config).eval()
    model.config.hf_icl_run = {"task": "regbench", "n_train": 12, "task_seed": 0, "task_options": TASK_OPTIONS}
    model.save_pretrained(folder)
    regbench_tokenizer().save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return save_tiny(tmp_path_factory.mktemp("run") / "model")


def test_probe_command_end_to_end(checkpoint, tmp_path):
    args = ["--train-rows", "12", "--test-rows", "6", "--samples-per-row", "4", "--min-position", "0"]
    results = main(["probe", "--checkpoint", str(checkpoint), "--output", str(tmp_path), *args, "--epochs", "2"])
    saved = json.loads((tmp_path / "probe.json").read_text())
    assert (tmp_path / "probe.png").stat().st_size > 0
    assert saved["probes"].keys() == {"count", "frequency", "existence", "state_equivalence"}
    for name in ("count", "frequency", "existence"):
        assert saved["probes"][name].keys() == {"1", "2", "3"}
    for entries in results["probes"].values():
        for entry in entries.values():
            assert len(entry["per_layer"]) == 3  # embeddings + 2 blocks
            assert entry["best"] == entry["per_layer"][entry["best_layer"]]
    with pytest.raises(SystemExit):
        main(["probe", "--checkpoint", str(checkpoint), "--width", "7"])


def test_attention_command_end_to_end(checkpoint, tmp_path):
    main(["attention", "--checkpoint", str(checkpoint), "--output", str(tmp_path), "--instance", "1", "--n-rows", "3"])
    saved = json.loads((tmp_path / "attention.json").read_text())
    row = common.regbench_rows(common.training_record(checkpoint), "test", 2)[1]
    start, stop = saved["instance"]["window"]
    assert saved["instance"]["states"] == automaton_states(row)[start:stop].tolist()
    assert saved["instance"]["text"] == row["text"][start:stop]
    for entry in saved["signatures"].values():
        assert entry["per_head"].keys() == {"1", "2"}
        assert all(0 <= v <= 1 + 1e-6 for heads in entry["per_head"].values() for v in heads)
    assert (tmp_path / "attention_maps.png").exists() and (tmp_path / "attention_ngram_heads.png").exists()


def test_attention_refuses_an_architecture_without_maps(tmp_path):
    folder = save_tiny(tmp_path / "model", "lstm")
    args = argparse.Namespace(
        checkpoint=folder, output=None, instance=0, start=0, window=10, n_rows=2, orders=[1], threads=1
    )
    with pytest.raises(ValueError, match="icl_lstm.*neither softmax attention nor an exact linear"):
        attention.check_arguments(args)


@pytest.mark.parametrize("arch", ["gla", "deltanet"])
def test_attention_runs_on_the_exact_maps_of_recurrent_models(arch, tmp_path):
    """P1 §5.1's n-gram-head signatures on exact token-mixing maps: each row read as its share of |M|."""
    folder = save_tiny(tmp_path / "model", arch)
    main(["attention", "--checkpoint", str(folder), "--output", str(tmp_path), "--n-rows", "2"])
    saved = json.loads((tmp_path / "attention.json").read_text())
    assert saved["architecture"].startswith(arch)
    for entry in saved["signatures"].values():
        assert entry["per_head"].keys() == {"1", "2"}
        assert all(0 <= v <= 1 + 1e-6 for heads in entry["per_head"].values() for v in heads)


def test_pairwise_tvd_command_end_to_end(checkpoint):
    results = main(["pairwise-tvd", "--checkpoint", str(checkpoint), "--n-rows", "4", "--max-positions", "10"])
    saved = json.loads((checkpoint.parent / "analysis" / "pairwise_tvd.json").read_text())  # default: <run>/analysis
    assert saved["predictors"] == ["truth", "transformer", "1-gram", "2-gram", "3-gram"]
    names = saved["predictors"]
    matrix = np.array([[saved["tvd"][a][b] for b in names] for a in names])
    np.testing.assert_allclose(matrix, matrix.T)
    np.testing.assert_allclose(np.diag(matrix), 0)
    rows = common.regbench_rows(common.training_record(checkpoint), "test", 4)
    short = [{**row, "text": row["text"][:11]} for row in rows]
    model, tokenizer = common.load_checkpoint(checkpoint)
    expected = regbench_metrics(model_next_token_probs(model, tokenizer, [r["text"] for r in short]), short)["tvd"]
    assert results["tvd"]["transformer"]["truth"] == pytest.approx(expected)


def test_pairwise_tvd_adds_baum_welch_and_lnw(checkpoint, tmp_path):
    from hf_icl.baselines.lnw import LearnedNgramReweighting

    LearnedNgramReweighting(variant="existence", hidden_size=8).save_pretrained(tmp_path / "lnw_b")
    args = ["--n-rows", "2", "--max-positions", "8", "--baum-welch", "--lnw", str(tmp_path / "lnw_b")]
    results = main(["pairwise-tvd", "--checkpoint", str(checkpoint), "--label", "tf", "--output", str(tmp_path), *args])
    assert results["predictors"] == ["truth", "tf", "1-gram", "2-gram", "3-gram", "Baum–Welch", "LNW_b"]
    assert all(results["tvd"][name][name] == 0 for name in results["predictors"])
    assert 0 < results["tvd"]["Baum–Welch"]["truth"] <= 1


def test_rows_ignore_the_runs_training_options(checkpoint):
    """A run's record keeps training options (`train_on_delimiter`) beside the data's; the rows take the data's only."""
    record = common.training_record(checkpoint)
    with_training = {**record, "task_options": {**record["task_options"], "train_on_delimiter": True}}
    assert common.regbench_rows(with_training, "test", 2) == common.regbench_rows(record, "test", 2)


def test_figures_draw_the_heads_with_the_most_2gram_mass_when_there_are_many():
    from hf_icl.analysis.attention import MAX_DRAWN_HEADS, drawn_heads

    many = [0.1, 0.5, 0.2, 0.9, 0.0, 0.3]  # channel-wise maps: more heads than are drawn
    signatures = {
        "previous_token": {"per_head": {"1": [1.0] * 6}},
        "follows_2gram": {"per_head": {"1": many, "2": [0.4, 0.2]}},
    }
    assert MAX_DRAWN_HEADS == 4
    assert drawn_heads(signatures) == {1: [3, 1, 5, 2], 2: [0, 1]}  # few heads: all of them, in order


def test_every_analysis_declares_the_task_family_it_reads(capsys):
    from types import ModuleType

    from hf_icl.analysis.__main__ import ANALYSES, build_parser, register_analysis
    from hf_icl.tasks import FAMILIES

    build_parser()  # discovers the package's analyses
    assert {"attention", "probe", "slowfast", "textmix"} <= set(ANALYSES)
    for command, module in ANALYSES.items():
        assert module.TASK_FAMILY is None or module.TASK_FAMILY in FAMILIES, command
    assert ANALYSES["attention"].TASK_FAMILY == "regbench" and ANALYSES["slowfast"].TASK_FAMILY == "icl_arithmetic"
    stray = ModuleType("stray_analysis")
    stray.COMMAND, stray.DESCRIPTION, stray.TASK_FAMILY = "stray", "A stray analysis.", "no_such_family"
    stray.add_arguments, stray.run = (lambda parser: None), (lambda args: {})
    with pytest.raises(ValueError, match="TASK_FAMILY='no_such_family' is not one of: .*regbench"):
        register_analysis(stray)
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "[models of task family 'regbench']" in " ".join(capsys.readouterr().out.split())
