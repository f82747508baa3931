"""Text language modelling (P1 §6, Table 2): the BPE tokenizer, the blocks, perplexity and the unigram baseline by
hand, train.py with n-gram heads end to end, the export, and clear errors for bad fields."""

import json
import math
import types
from pathlib import Path

import numpy as np
import pytest
import torch
from datasets import load_dataset
from transformers import AutoTokenizer

import hf_icl
from hf_icl.tasks import TaskRequest, family_of, task_builder, task_config
from hf_icl.tasks.text_lm import TOKENIZER_FILE, document_ids, token_blocks, train_bpe
from hf_icl.tasks.text_lm.evaluation import evaluate_text_lm, unigram_losses
from hf_icl.tasks.text_mixture import split_documents, stdlib_documents
from hf_icl.training import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def corpus():
    documents = stdlib_documents()
    return {split: [documents[n] for n in split_documents(documents, split)] for split in ("train", "validation")}


@pytest.fixture(scope="module")
def data():
    return family_of("text_lm").prepare_data(TaskRequest("text_lm", options={"vocab_size": 512}))


def test_bpe_is_deterministic_and_round_trips(corpus):
    first, second = train_bpe(corpus["train"], 512), train_bpe(corpus["train"], 512)
    assert first.backend_tokenizer.to_str() == second.backend_tokenizer.to_str()
    assert len(first) == 512 and first.convert_ids_to_tokens(0) == "<|endoftext|>" == first.eos_token == first.pad_token
    for text in corpus["validation"] + ["  two  spaces , tab\there — é\n\n"]:  # byte level: any text survives
        assert first.decode(first(text)["input_ids"]) == text


def test_tokenizer_is_cached_beside_the_splits_and_saved_with_the_data(data, corpus):
    builder = task_builder("text_lm", vocab_size=512, seed=0)  # the overrides prepare_data passes
    cached = Path(builder.cache_dir) / TOKENIZER_FILE
    assert json.loads(cached.read_text())["model"] == json.loads(data.tokenizer.backend_tokenizer.to_str())["model"]
    assert data.tokenizer.backend_tokenizer.to_str() == train_bpe(corpus["train"], 512).backend_tokenizer.to_str()
    again = family_of("text_lm").prepare_data(TaskRequest("text_lm", options={"vocab_size": 512}))
    assert again.train["input_ids"] == data.train["input_ids"]
    assert data.model_fields == {"vocab_size": 512, "pad_token_id": 0, "eos_token_id": 0}


def test_blocks_are_consecutive_slices_of_the_token_stream(data):
    documents = [[5, 6, 7, 0], [8, 9, 0], [10, 11, 12, 13, 0]]  # ids with eos = 0, as document_ids gives them
    assert token_blocks(documents, 4) == [[5, 6, 7, 0], [8, 9, 0, 10], [11, 12, 13, 0]]
    assert token_blocks(documents, 5) == [[5, 6, 7, 0, 8], [9, 0, 10, 11, 12]]  # the last 2 tokens are dropped
    assert token_blocks(documents, 13) == []
    stream = sum(document_ids(data.tokenizer, data.splits["train"]["text"]), [])
    blocks = data.train["input_ids"]
    assert data.train["labels"] == blocks and {len(b) for b in blocks} == {128}
    assert sum(blocks, []) == stream[: len(blocks) * 128] and len(stream) - len(blocks) * 128 < 128


class BigramTable(torch.nn.Module):
    """logits[b, t] = table[ids[b, t]]: a fixed next-token distribution per current token."""

    def __init__(self, probabilities):
        super().__init__()
        self.table = torch.nn.Embedding.from_pretrained(torch.tensor(probabilities).log())

    def forward(self, input_ids, use_cache=None):  # a scoring pass asks for no cache, as of a causal LM
        assert use_cache is False
        return types.SimpleNamespace(logits=self.table(input_ids))


def test_perplexity_is_exp_of_the_mean_cross_entropy_by_hand():
    model = BigramTable([[0.75, 0.25], [0.5, 0.5]])
    results = evaluate_text_lm(model, [[0, 0, 1, 1], [1, 0, 0, 0]], [[0, 1]], vocab_size=2, batch_size=1)
    # predicted: 0|0 .75, 1|0 .25, 1|1 .5  and  0|1 .5, 0|0 .75, 0|0 .75
    loss = -(math.log(0.75) * 3 + math.log(0.25) + math.log(0.5) * 2) / 6
    assert results["model"]["loss"] == pytest.approx(loss) == pytest.approx(0.6059391565991873)
    assert results["model"]["perplexity"] == pytest.approx(1.83297284933147)  # (1 / (.75³ · .25 · .5²))^(1/6)
    assert results["blocks"] == 2 and results["predicted_tokens"] == 6


def test_unigram_baseline_by_hand():
    # training tokens 0,1,1 | 1,2,2 -> add-one counts [2, 4, 3] of 9; scored targets 2 and 0
    losses = unigram_losses(np.array([[0, 1, 1], [1, 2, 2]]), np.array([[1, 2, 0]]), vocab_size=3)
    np.testing.assert_allclose(losses, [[math.log(3.0), math.log(4.5)]])
    results = evaluate_text_lm(None, [[1, 2, 0]], [[0, 1, 1], [1, 2, 2]], vocab_size=3)
    assert results["baselines"]["unigram"]["perplexity"] == pytest.approx(math.sqrt(13.5))
    assert "model" not in results


def test_train_py_with_ngram_heads_end_to_end(tmp_path, data):
    output = tmp_path / "run"
    metrics = main(
        ["--task", "text_lm", "--architecture", "llama", "--preset", "tiny", "--override", "num_hidden_layers=4",
         "--ngram-heads=1:1,2,3:replace;-2:1,2,3:replace", "--task-option", "vocab_size=512", "--max-steps", "3",
         "--batch-size", "8", "--report-to", "none", "--threads", "1", "--output-dir", str(output)]
    )  # fmt: skip
    test = metrics["test"]
    assert test["model"]["perplexity"] == pytest.approx(math.exp(test["model"]["loss"]))
    assert 1 < test["model"]["perplexity"] < 4 * 512 and test["baselines"]["unigram"]["perplexity"] < 512
    assert metrics["task_facts"]["train_blocks"] > 100 and metrics["train"]["steps"] == 3
    saved = AutoTokenizer.from_pretrained(output / "model")
    text = "Return the number of items."
    ids = saved(text)["input_ids"]
    assert ids == data.tokenizer(text)["input_ids"] and saved.decode(ids) == text
    assert "| model |" in (output / "summary.md").read_text()

    from hf_icl.evaluate import main as evaluate_main

    validation = evaluate_main(
        ["--checkpoint", str(output / "model"), "--task", "text_lm", "--split", "validation",
         "--output-dir", str(tmp_path / "eval")]
    )["validation"]  # fmt: skip
    assert validation["model"]["perplexity"] > 1 and validation["blocks"] > 0
    assert json.loads((tmp_path / "eval" / "metrics.json").read_text())["validation"] == validation


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"vocab_size": 100}, "vocab_size=100 is not allowed: expected an integer >= 257"),
        ({"block_size": 1}, "block_size=1 is not allowed: expected an integer >= 2"),
        ({"vocab_size": "big"}, "vocab_size='big' is not allowed: expected an integer"),
        ({"n_train": 10}, "override 'n_train' is not a field of task 'text_lm'"),
    ],
)
def test_bad_fields_name_the_field_and_what_is_allowed(overrides, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        task_config("text_lm", **overrides)


def test_bad_run_option_exits_before_any_work(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--task", "text_lm", "--task-option", "block_size=0", "--output-dir", str(tmp_path / "never")])
    assert exit_info.value.code == 2 and "block_size=0 is not allowed" in capsys.readouterr().err
    assert not (tmp_path / "never").exists()


def test_too_few_documents_and_the_export(tmp_path):
    folder = tmp_path / "two"
    folder.mkdir()
    for name in ("a", "b"):
        (folder / f"{name}.txt").write_text("some text " * 50)
    with pytest.raises(ValueError, match="gives no non-empty train document .2 documents in all.*at least 3"):
        hf_icl.load_task("text_lm", source=str(folder), cache_dir=str(tmp_path / "cache"))
    from hf_icl.export import main as export_main

    out = export_main(["text_lm", "--output", str(tmp_path / "out")])
    card = (out / "README.md").read_text()
    splits = hf_icl.load_task("text_lm")
    assert "Python Software Foundation License" in card and f"| default | train | {len(splits['train'])} |" in card
    assert load_dataset(str(out), "default", split="validation")["name"] == splits["validation"]["name"]
