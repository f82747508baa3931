"""Generation evaluation (P4 §3; DESIGN §2.3, §5.6): hand-computed scores, a scripted oracle model scored 1.0 and a
known-wrong one 0.0 through the real pipeline, pipeline == teacher-forced argmax on a briefly trained checkpoint,
`train.py --task copy` end to end and `python -m hf_icl.evaluate` on its checkpoint."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn
from transformers import GenerationMixin, PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import CausalLMOutputWithPast

from hf_icl.tasks import task_builder
from hf_icl.tasks.generation import GENERATION_TASKS
from hf_icl.tasks.generation.evaluation import evaluate_generation, score
from hf_icl.tasks.generation.generative import Query

ROOT = Path(__file__).resolve().parents[1]


class ScriptedConfig(PretrainedConfig):
    model_type = "test_scripted_lm"


class ScriptedLM(PreTrainedModel, GenerationMixin):
    """A tiny torch "model": after the longest known prompt in its (unpadded) input it continues that prompt's
    script, one token per position, exactly (an oracle) or with every token replaced by another (known-wrong)."""

    config_class = ScriptedConfig

    def __init__(self, config, scripts=None, tokenizer=None, wrong=False):
        super().__init__(config)
        self.anchor = nn.Parameter(torch.zeros(1))  # gives the model a device
        self.scripts, self.tokenizer, self.wrong = scripts or {}, tokenizer, wrong
        self.prompt_lengths = {len(prompt) for prompt in self.scripts}

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        return False

    def prepare_inputs_for_generation(self, input_ids, attention_mask=None, **kwargs):
        return {"input_ids": input_ids, "attention_mask": attention_mask}  # no cache: rerun the whole prefix

    def _next(self, script: str, k: int) -> int:
        vocab, tok = self.tokenizer.get_vocab(), self.tokenizer
        right = vocab[script[k]] if k < len(script) else tok.eos_token_id
        wrong = (right + 1) % len(vocab)
        while wrong in (right, tok.pad_token_id, tok.eos_token_id):
            wrong = (wrong + 1) % len(vocab)
        return wrong if self.wrong else right

    def forward(self, input_ids, attention_mask=None, **kwargs):
        batch, length = input_ids.shape
        chars = self.tokenizer.convert_ids_to_tokens(input_ids.flatten().tolist())
        mask = (torch.ones_like(input_ids) if attention_mask is None else attention_mask).tolist()
        predicted = [[self.tokenizer.eos_token_id] * length for _ in range(batch)]
        for b in range(batch):
            seen, prompt_end, script = [], None, ""
            for t in range(length):
                if not mask[b][t]:
                    continue  # left padding
                seen.append(chars[b * length + t])
                if len(seen) in self.prompt_lengths and "".join(seen) in self.scripts:
                    prompt_end, script = len(seen), self.scripts["".join(seen)]
                predicted[b][t] = self._next(script, len(seen) - prompt_end if prompt_end is not None else len(script))
        logits = 10.0 * nn.functional.one_hot(torch.tensor(predicted), self.config.vocab_size).float()  # (B, T, V)
        return CausalLMOutputWithPast(logits=logits)


def test_score_hand_cases():
    queries = [Query("p", "abc", True, 3)] * 5 + [Query("q", "x", False, 1)] * 2
    continuations = ["abc.", "abc", "abcd.", "ab.", "abc.**", "x", "y"]
    exact, chars = score(queries, continuations)
    assert exact.tolist() == [1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0]  # no EOS, too long, too short, pads after EOS
    assert chars.tolist() == pytest.approx([1, 1, 1, 2 / 3, 1, 1, 0])


CASES = {
    "copy": dict(n_per_length=3, test_max_length=40, train_max_length=20, context_len=64),
    "lookup_suffix": dict(n_per_length=3, test_max_length=40),  # prompts of several lengths share a batch
    "phonebook": dict(n_per_length=2, test_max_entries=20),
    "associative_recall": dict(n_test=6, input_seq_len=40),
    "mqar": dict(n_test=4, vocab_size=80, input_seq_len=32, num_kv_pairs=4),
}


@pytest.mark.parametrize("task", sorted(CASES))
def test_oracle_model_scores_one_and_wrong_model_zero(task, tmp_path):
    builder = task_builder(task, cache_dir=str(tmp_path), n_train=2, n_validation=2, **CASES[task])
    builder.download_and_prepare()
    rows, spec = builder.as_dataset()["test"], GENERATION_TASKS[task]
    tokenizer = spec.tokenizer(builder.config)
    scripts = {q.prompt: q.answer + ("." if q.eos else "") for row in rows for q in spec.queries(row)}
    config = ScriptedConfig(
        vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id
    )
    for wrong, expected in ((False, 1.0), (True, 0.0)):
        model = ScriptedLM(config, scripts, tokenizer, wrong)
        results = evaluate_generation(task, model, tokenizer, rows, builder.config, batch_size=4, baselines=False)
        summary = results["model"]
        assert summary["string_accuracy"] == summary["char_accuracy"] == expected
        assert summary["teacher_forced_string_accuracy"] == expected and results["pipeline_matches_teacher_forced"]
        curve = results[f"per_{spec.group_by}"]
        assert set(curve.values()) == {expected} and results["num_queries"] == len(scripts)
    if task == "copy":
        assert summary["string_accuracy_beyond_train"] == 0.0 and list(curve) == ["10", "20", "30", "40"]


# A copy task a tiny Transformer half-learns in ~150 CPU steps: 4 letters, strings of 1-2, tested on 1-4.
COPY_RUN = [
    "--task", "copy", "--architecture", "transformer", "--preset", "tiny", "--threads", "1", "--report-to", "none",
    "--max-steps", "150", "--batch-size", "16", "--n-train", "256", "--lr", "5e-3", "--log-every", "10",
    "--task-option", "context_len=32", "--task-option", "alphabet_size=4", "--task-option", "train_max_length=2",
    "--task-option", "test_min_length=1", "--task-option", "test_max_length=4", "--task-option", "test_length_step=1",
    "--task-option", "n_per_length=16", "--task-option", "n_validation=4",
]  # fmt: skip


@pytest.fixture(scope="module")
def copy_run(tmp_path_factory):
    output = tmp_path_factory.mktemp("copy") / "run"
    result = subprocess.run(
        [sys.executable, str(ROOT / "train.py"), *COPY_RUN, "--output-dir", str(output)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return output


def test_copy_run_writes_generation_results(copy_run):
    metrics = json.loads((copy_run / "metrics.json").read_text())
    test = metrics["test"]
    assert test["group_by"] == "length" and test["train_max_length"] == 2 and list(test["per_length"]) == list("1234")
    assert set(test["baselines"]) == {"lookup oracle"} | {f"{n}-gram copier" for n in range(1, 9)}
    assert test["baselines"]["lookup oracle"]["string_accuracy"] == 1.0
    assert metrics["run_config"]["format"].startswith("packed contexts")
    for name in ("summary.md", "training_curves.png", "model/model.safetensors", "model/tokenizer.json"):
        assert (copy_run / name).is_file(), name
    assert "| lookup oracle | 1.0000 |" in (copy_run / "summary.md").read_text()
    losses = [h["loss"] for h in metrics["train"]["history"]]
    assert losses[-1] < losses[0] - 1.0


def test_pipeline_generation_equals_teacher_forced_argmax(copy_run):
    test = json.loads((copy_run / "metrics.json").read_text())["test"]
    model = test["model"]
    assert 0.0 < model["string_accuracy"] < 1.0, "a half-trained model makes the comparison informative"
    assert model["string_accuracy"] == model["teacher_forced_string_accuracy"]
    assert test["per_length"] == test["teacher_forced"]["per_length"] and test["pipeline_matches_teacher_forced"]


def test_evaluate_cli_reproduces_the_run(copy_run, tmp_path):
    from hf_icl.evaluate import main as evaluate_main

    again = evaluate_main(["--checkpoint", str(copy_run / "model"), "--task", "copy", "--output-dir", str(tmp_path)])
    trained = json.loads((copy_run / "metrics.json").read_text())["test"]
    assert again["test"]["per_length"] == trained["per_length"]
    assert again["test"]["baselines"] == trained["baselines"]
    assert (tmp_path / "generation_curves.png").read_bytes()[:4] == b"\x89PNG"
