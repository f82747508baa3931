"""Bad input that used to end in a traceback: every command ends in status 2 and one line naming the option, and the
Python API raises `ValueError` naming the argument (a checkpoint evaluated on another task's vocabulary, output
folders that cannot be created, a test row past the split's end; config sizes of zero, examples of the wrong rank
or shape, NaN or infinity, no examples at all, an empty prompt)."""

from __future__ import annotations

import math

import pytest
import torch
from cli_entry_points import call, export_command, snapshot, tiny_checkpoint
from test_cli_safety import assert_one_line_error as assert_only_line
from test_regbench_analysis import save_tiny

import hf_icl
import hf_icl.evaluate
from hf_icl.analysis.__main__ import main as analysis_main
from hf_icl.architectures.heads import build_model


def assert_one_line_error(outcome, *fragments) -> str:
    """Status 2 and one error line holding every fragment, no traceback (progress bars of the data generation
    before a check that needs the data may precede it)."""
    assert outcome.escaped is None, outcome.escaped
    errors = [line for line in outcome.err.replace("\r", "\n").split("\n") if "error:" in line]
    assert outcome.status == 2 and len(errors) == 1, (outcome.status, outcome.err[-3000:])
    for fragment in fragments:
        assert fragment in errors[0], errors[0]
    assert "Traceback" not in outcome.err
    return errors[0]


# ---- commands -------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def regbench_checkpoint(tmp_path_factory):
    """A tiny RegBench model with its tokenizer and its training record."""
    return save_tiny(tmp_path_factory.mktemp("checkpoint") / "model")


def a_file(tmp_path):
    (tmp_path / "a_file").write_text("x\n")
    return tmp_path / "a_file"


def test_evaluate_into_a_folder_that_cannot_be_created(regbench_checkpoint, tmp_path):
    argv = ["--checkpoint", str(regbench_checkpoint), "--task", "regbench", "--max-rows", "2",
            "--output-dir", str(a_file(tmp_path) / "eval")]  # fmt: skip
    assert_only_line(call(hf_icl.evaluate.main, argv), "argument --output-dir", "cannot be created", "is a file")


@pytest.mark.parametrize("name", ["regbench", "copying"])
@pytest.mark.parametrize("flag", ["--output", "--cache-dir"])
def test_export_into_a_folder_that_cannot_be_created(name, flag, tmp_path):
    inside = str(a_file(tmp_path) / "x")
    argv = ["--output", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache"), flag, inside]
    outcome = call(export_command(name).main, argv)
    assert_only_line(outcome, f"argument {flag}", "cannot be created", "is a file")
    assert not (tmp_path / "out").exists()


def test_evaluating_a_checkpoint_on_a_task_with_another_vocabulary(regbench_checkpoint, tmp_path):
    """The checkpoint's own tokenizer met the other task's tokens: `WordLevel error: Missing [UNK] token`."""
    argv = ["--checkpoint", str(regbench_checkpoint), "--task", "dyck_2", "--max-rows", "2",
            "--output-dir", str(tmp_path / "eval")]  # fmt: skip
    line = assert_one_line_error(call(hf_icl.evaluate.main, argv), "argument --checkpoint", "task 'dyck_2'",
                                 "trained on task 'regbench'")  # fmt: skip
    assert "lacks" in line or "vocab_size" in line
    assert not (tmp_path / "eval").exists()


def test_evaluating_a_checkpoint_whose_vocabulary_is_too_small(tmp_path):
    """No tokenizer of its own: the task's ids ran past the embedding table."""
    folder = tmp_path / "model"
    build_model("causal_lm", hf_icl.config_for("transformer", "tiny", vocab_size=5)).save_pretrained(folder)
    argv = ["--checkpoint", str(folder), "--task", "regbench", "--n-train", "100", "--max-rows", "2", "--output-dir",
            str(tmp_path / "e")]  # fmt: skip
    assert_one_line_error(call(hf_icl.evaluate.main, argv), "argument --checkpoint", "vocab_size=5", "vocab_size=20")


def test_an_evaluation_checkpoint_that_fits_still_runs(tmp_path):
    folder = tiny_checkpoint(tmp_path / "model")  # vocab_size=20, no tokenizer: the task's
    argv = ["--checkpoint", str(folder), "--task", "regbench", "--n-train", "100", "--max-rows", "2", "--output-dir",
            str(tmp_path / "e")]  # fmt: skip
    outcome = call(hf_icl.evaluate.main, argv)
    assert outcome.status == 0 and outcome.escaped is None, outcome.err[-2000:]
    assert (tmp_path / "e" / "metrics.json").is_file()


def test_attention_instance_past_the_test_split(regbench_checkpoint, tmp_path):
    out = tmp_path / "analysis"
    argv = ["attention", "--checkpoint", str(regbench_checkpoint), "--output", str(out), "--instance", "100000",
            "--n-rows", "2"]  # fmt: skip
    assert_one_line_error(call(analysis_main, argv), "attention: argument --instance", "instance=100000")
    assert not out.exists()


@pytest.mark.parametrize("command", ["attention", "probe"])
def test_analysis_output_that_cannot_be_created(command, regbench_checkpoint, tmp_path):
    argv = [command, "--checkpoint", str(regbench_checkpoint), "--output", str(a_file(tmp_path) / "out")]
    before = snapshot(tmp_path)
    assert_only_line(call(analysis_main, argv), "argument --output", "cannot be created")
    assert snapshot(tmp_path) == before


# ---- the Python API -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [0, -1])
@pytest.mark.parametrize("field", ["num_attention_heads", "hidden_size"])
@pytest.mark.parametrize("architecture", hf_icl.list_architectures())
def test_config_sizes_below_one_name_the_field(architecture, field, value):
    """The sizes are checked before the mixer fields derived from them: `num_attention_heads=-1` was refused as
    `num_masked_heads=0 must be in [0, -1]`, Mamba's `hidden_size=0` as `dt_rank=0 is not allowed`."""
    with pytest.raises(ValueError, match=rf"^{field}={value} is not allowed: expected an integer >= 1"):
        hf_icl.config_for(architecture, "tiny", **{field: value})


@pytest.fixture(scope="module", params=["transformer", "mamba"])
def regression_model(request):
    config = hf_icl.config_for(request.param, "tiny", input_dim=3, output_dim=1, tie_word_embeddings=False)
    return build_model("regression", config).eval()


XS = torch.randn(2, 4, 3)
BAD_EXAMPLES = [
    (dict(xs=XS[0]), r"xs has shape \(4, 3\): expected \(batch, N >= 1, input_dim=3\)"),
    (dict(xs=XS[..., None]), r"xs has shape \(2, 4, 3, 1\)"),
    (dict(xs=XS[:, :0]), r"xs has shape \(2, 0, 3\): N=0 examples"),
    (dict(xs=XS[..., :2]), r"xs has width 2 but config.input_dim=3"),
    (dict(xs=XS.tolist()), r"xs is a list: expected a tensor"),
    (dict(xs=XS.clone().index_fill_(1, torch.tensor([2]), math.nan)), r"xs holds NaN or infinite values"),
    (dict(xs=XS.clone().index_fill_(1, torch.tensor([0]), math.inf)), r"xs holds NaN or infinite values"),
    (dict(xs=XS, ys=torch.randn(2)), r"ys has shape \(2,\): expected \(batch=2, n <= 4\)"),
    (dict(xs=XS, ys=torch.randn(3, 4)), r"ys has shape \(3, 4\)"),
    (dict(xs=XS, ys=torch.randn(2, 4, 2)), r"ys has shape \(2, 4, 2\).*output_dim=1"),
    (dict(xs=XS, ys=torch.randn(2, 5)), r"ys has 5 examples but xs only 4"),
    (dict(xs=XS, ys=torch.tensor([[0.0, math.nan], [1.0, 2.0]])), r"ys holds NaN or infinite values"),
    (dict(inputs=XS[0]), r"inputs has shape \(4, 3\): expected \(batch, T, input_dim=3\)"),
    (dict(inputs=XS.clone().fill_(math.inf)), r"inputs holds NaN or infinite values"),
]  # fmt: skip


@pytest.mark.parametrize("kwargs, message", BAD_EXAMPLES, ids=[m.split(":")[0][:40] for _, m in BAD_EXAMPLES])
def test_bad_examples_name_the_argument(regression_model, kwargs, message):
    """Wrong ranks and shapes gave raw IndexErrors; NaN and infinity passed through; N = 0 gave a NaN loss."""
    with pytest.raises(ValueError, match=message):
        regression_model(**kwargs)
    if "xs" in kwargs and torch.is_tensor(kwargs["xs"]):
        with pytest.raises(ValueError, match=message):
            regression_model.predict_streaming(kwargs["xs"], kwargs.get("ys", torch.zeros(2, 0)))


def test_good_examples_still_give_a_finite_loss(regression_model):
    out = regression_model(xs=XS, ys=torch.randn(2, 4))
    assert out.predictions.shape == (2, 4) and torch.isfinite(out.loss)


@pytest.mark.parametrize("prompt", [dict(input_ids=torch.zeros(1, 0, dtype=torch.long)), dict(inputs=torch.zeros(2, 0,
                                    dtype=torch.long))], ids=["input_ids", "inputs"])  # fmt: skip
def test_generate_on_an_empty_prompt_names_it(prompt):
    model = build_model("causal_lm", hf_icl.config_for("transformer", "tiny", vocab_size=20)).eval()
    name = next(iter(prompt))
    with pytest.raises(ValueError, match=rf"{name} has shape \(\d, 0\): an empty prompt"):
        model.generate(**prompt, max_new_tokens=2)
    out = model.generate(input_ids=torch.zeros(1, 1, dtype=torch.long), max_new_tokens=2, do_sample=False)
    assert out.shape[0] == 1 and 2 <= out.shape[1] <= 3  # the prompt, then tokens up to eos
