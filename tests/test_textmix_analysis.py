"""`python -m hf_icl.analysis textmix` (P3 §4.3 text mixtures): its measurements on hand-built cases, the informed
mode's limits (γ = 0 is the frozen y, γ = 1 the model's own y) and the command end to end on a tiny model."""

import json

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM

import hf_icl
from hf_icl.analysis import textmix
from hf_icl.analysis.__main__ import main as analysis_main
from hf_icl.tasks.text_mixture import text_tokenizer

E1, E2, E3 = torch.eye(3)


def test_join_contrast_and_lag_on_hand_built_features():
    features = torch.stack([E1, E1, E1, E1, E2, E2])  # the join at 3; position 3 still looks like the first excerpt
    similarity = features @ features.T
    same = torch.tensor([0, 0, 0, 1, 1, 1])[:, None] == torch.tensor([0, 0, 0, 1, 1, 1])[None, :]
    within, across = similarity[same].mean(), similarity[~same].mean()  # 14/18 and 3/18
    assert textmix.join_contrast(features, [3]) == pytest.approx(float(within - across))
    assert textmix.join_contrast(torch.stack([E1, E1, E2, E2, E3, E3]), [2, 4]) == pytest.approx(1.0)
    assert textmix.join_lag(features, 3) == 1  # position 3 nearer the old mean, position 4 the new one
    assert textmix.join_lag(torch.stack([E1, E1, E1]), 1) == 2  # never switches: the whole rest


def test_nearest_neighbour_accuracy_and_chance():
    embeddings = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9], [0.2, 1.0]])
    # cosine neighbours: 0↔1 (a, a) right; 2 → 3 right; 3 → 4 (cos 0.996 > 0.994 to 2) and 4 → 3 wrong
    assert textmix.nearest_neighbour_accuracy(embeddings, ["a", "a", "b", "b", "a"]) == pytest.approx(3 / 5)
    assert textmix.chance_accuracy(["a", "a", "b", "b"]) == pytest.approx(1 / 3)
    ids = torch.tensor([[0, 0, 1, 2]])
    np.testing.assert_allclose(textmix.character_histograms(ids, 4), [[0.5, 0.25, 0.25, 0.0]])


def tiny_model(l_max=48):
    tokenizer = text_tokenizer()
    config = hf_icl.config_for("slowfast_transformer", "tiny", vocab_size=len(tokenizer))
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.1 * torch.randn_like(parameter))
    model.config.hf_icl_run = {"task": "text_mixture", "task_seed": 0,
                               "task_options": {"l_start": 20, "l_finish": 30, "l_max": l_max}}  # fmt: skip
    return model, tokenizer


def test_informed_mode_limits():
    model, _ = tiny_model()
    first, second = torch.randint(0, 90, (3, 24)), torch.randint(0, 90, (3, 24))
    frozen = textmix.informed_losses(model, first, second, rate=0.0)
    torch.testing.assert_close(frozen["informed"], frozen["frozen"])  # γ = 0: the moving average never moves
    own = textmix.informed_losses(model, first, second, rate=1.0)
    torch.testing.assert_close(own["informed"], own["uninformed"])  # γ = 1: it is the model's own y
    assert not torch.allclose(own["frozen"], own["uninformed"])  # the first part's y does change the losses


def test_one_pass_gives_the_slow_features_and_the_fast_state_of_separate_passes():
    model, _ = tiny_model()
    ids = torch.randint(0, 90, (3, 20))
    slow, fast = textmix.slow_and_fast(model, ids, batch_size=2)
    with torch.no_grad():
        torch.testing.assert_close(slow, model.model.compute_slow_features(ids))
        torch.testing.assert_close(fast, model(ids, output_hidden_states=True).hidden_states[model.config.slow_layer])


def saved_tiny_model(folder):
    """`folder` holding a tiny slow/fast checkpoint and its tokenizer (a save_pretrained folder)."""
    model, tokenizer = tiny_model()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.mark.parametrize("split", [None, "validation"])
def test_textmix_command_end_to_end(tmp_path, split):
    checkpoint, out = saved_tiny_model(tmp_path / "model"), tmp_path / "analysis"
    options = [] if split is None else ["--split", split]
    analysis_main(["textmix", "--checkpoint", str(checkpoint), "--output", str(out), "--n-rows", "6",
                   "--excerpts-per-document", "2", *options])  # fmt: skip
    saved = json.loads((out / "textmix_analysis.json").read_text())
    assert saved["task"]["l_max"] == 48 and saved["joins"]["two_excerpts"]["rows"] == 6
    assert saved["split"] == (split or "test")  # the default: verdicts read test
    for key in ("y", "x"):
        assert -2 <= saved["joins"]["three_excerpts"][key]["contrast"] <= 2
    accuracy = saved["embedding"]["nearest_neighbour_accuracy"]
    assert set(accuracy) == {"mean y", "mean x (fast state, control)", "character histogram (control)", "chance"}
    assert set(saved["informed"]["mean_difference_to_uninformed"]) == {"informed", "frozen", "mismatched"}
    for name in ("textmix_joins.png", "textmix_embedding.png", "textmix_informed.png"):
        assert (out / name).stat().st_size > 0


def test_textmix_refuses_a_split_that_is_not_held_out(tmp_path, capsys):
    checkpoint = saved_tiny_model(tmp_path / "model")
    with pytest.raises(SystemExit):
        analysis_main(["textmix", "--checkpoint", str(checkpoint), "--output", str(tmp_path / "out"),
                       "--split", "train"])  # fmt: skip
    assert "argument --split: invalid choice: 'train'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_textmix_refuses_a_model_of_another_task(tmp_path):
    model, tokenizer = tiny_model()
    model.config.hf_icl_run = {"task": "icl_arithmetic", "task_options": {}}
    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    with pytest.raises(SystemExit):
        analysis_main(["textmix", "--checkpoint", str(tmp_path / "model"), "--output", str(tmp_path / "out")])


@pytest.mark.parametrize("split", textmix.SPLITS)
def test_mixture_rows_are_the_named_split(split):
    from hf_icl.tasks import load_task
    from hf_icl.tasks.documents import load_documents

    model, _ = tiny_model()
    config = textmix.task_config(model)
    texts, boundaries = textmix.mixture_rows(load_documents(config), config, 3, split)
    rows = load_task("text_mixture", l_start=20, l_finish=30, l_max=48, n_train=1, n_validation=3, n_test=3)[split]
    assert texts == rows["text"] and boundaries == [[cut] for cut in rows["cut"]]


def test_held_out_documents_keep_test_and_validation_apart():
    from hf_icl.tasks.documents import load_documents, split_documents

    model, _ = tiny_model()
    corpus = load_documents(textmix.task_config(model))
    test = textmix.held_out_documents(corpus, "test", 96)
    validation = textmix.held_out_documents(corpus, "validation", 96)
    assert test and validation and not set(test) & set(validation)
    assert set(test) <= set(split_documents(corpus, "test"))
    assert set(validation) <= set(split_documents(corpus, "validation"))
    assert all(len(text) >= 96 for text in (test | validation).values())
    with pytest.raises(ValueError, match="split: 'train' is not one of test, validation"):
        textmix.held_out_documents(corpus, "train", 96)
