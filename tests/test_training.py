"""train.py end to end: artifacts, loss decrease, exact resume after a kill, 2-process DDP, fail-fast input checks."""

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from safetensors.torch import load_file
from tiny_runs import TINY_RUN

from hf_icl.training import main, provenance


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


ROOT = Path(__file__).resolve().parents[1]


def run_train(args, env=None, launcher=None, timeout=600):
    command = (launcher or [sys.executable]) + [str(ROOT / "train.py"), *args]
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})},
    )


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    output = tmp_path_factory.mktemp("smoke") / "run"
    result = run_train(
        [*TINY_RUN, "--max-steps", "20", "--output-dir", str(output), "--lr", "3e-3", "--log-every", "1"]
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return output


def test_smoke_run_writes_reports_and_learns(smoke_run):
    metrics = json.loads((smoke_run / "metrics.json").read_text())
    history = metrics["train"]["history"]
    losses = [h["loss"] for h in history]
    assert len(losses) == 20 and sum(losses[-3:]) / 3 < sum(losses[:3]) / 3 - 0.2
    assert set(metrics["test"]["baselines"]) >= {"1-gram (paper)", "2-gram (paper)", "3-gram (paper)"}
    assert 0 <= metrics["test"]["model"]["accuracy"] <= 1 and 0 <= metrics["test"]["model"]["tvd"] <= 1
    assert metrics["run_config"]["train_on_delimiter"] is True
    assert metrics["code"] == provenance.code_provenance()  # which code trained it (unchanged since the run)
    # the tiny Transformer's KV cache at 512 tokens: 2 layers × (keys, values) × 512 × d = 64 × 4 bytes
    assert metrics["state_size"] == {"bytes_per_sequence": 2 * 2 * 512 * 64 * 4, "length": 512, "fixed": False}
    for name in ("summary.md", "training_curves.png", "model/model.safetensors", "model/tokenizer.json"):
        assert (smoke_run / name).is_file(), name
    assert (smoke_run / "training_curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| model |" in (smoke_run / "summary.md").read_text()


def test_model_card(smoke_run):
    card = (smoke_run / "model" / "README.md").read_text()
    front, body = card.split("---\n")[1], card.split("---\n", 2)[2]
    meta = yaml.safe_load(front)
    assert meta["library_name"] == "transformers"
    assert {"hf_icl", "transformer", "regbench"} <= set(meta["tags"])
    assert meta["datasets"] == ["hf_icl/regbench"] and meta["metrics"] == ["accuracy", "tvd"]
    metrics = json.loads((smoke_run / "metrics.json").read_text())
    assert f"{metrics['num_parameters']:,} parameters" in body
    assert f"{metrics['state_size']['bytes_per_sequence']:,} bytes at 512 tokens" in body
    assert f"| this model | {metrics['test']['model']['accuracy']:.4f} |" in body
    assert "| 3-gram (paper) |" in body
    assert "trust_remote_code=True" in body and 'pipeline("text-generation"' in body
    assert '"n_train": 100' in body and '"architecture": "transformer"' in body


def test_resume_after_kill_matches_uninterrupted_run(tmp_path):
    # 100 rows / batch 32 = 4 steps per epoch: the checkpoint at step 3 is mid-epoch, the kill at step 5 loses work.
    # Augmented epochs and dropout resume exactly too: the data loader draws nothing from the generators dropout uses.
    common = [*TINY_RUN, "--max-steps", "9", "--checkpoint-every", "3", "--augment", "--override", "dropout=0.1"]
    main([*common, "--output-dir", str(tmp_path / "straight")])  # in this process: only the kill needs its own
    killed = run_train([*common, "--output-dir", str(tmp_path / "resumed")], env={"HF_ICL_TEST_KILL_AT_STEP": "5"})
    assert killed.returncode == 137
    assert not (tmp_path / "resumed" / "model").exists()
    resumed = run_train([*common, "--output-dir", str(tmp_path / "resumed"), "--resume"])
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resumed from" in resumed.stdout + resumed.stderr
    segments = json.loads((tmp_path / "resumed" / "metrics.json").read_text())["code_segments"]
    assert [segment.pop("from_step") for segment in segments] == [0, 3]  # the killed process's, then the resumed's
    assert segments == [provenance.code_provenance()] * 2
    assert "code_segments" not in json.loads((tmp_path / "straight" / "metrics.json").read_text())
    a = load_file(tmp_path / "straight" / "model" / "model.safetensors")
    b = load_file(tmp_path / "resumed" / "model" / "model.safetensors")
    assert a.keys() == b.keys()
    assert all((a[k] == b[k]).all() for k in a)


def test_two_process_ddp_ends_with_identical_weights(tmp_path):
    launcher = [
        "accelerate",
        "launch",
        "--multi_gpu",
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "--main_process_port",  # not accelerate's default 29500: other tests may launch at the same time
        str(free_port()),
    ]
    result = run_train(
        [*TINY_RUN, "--max-steps", "4", "--output-dir", str(tmp_path / "ddp")],
        env={"ACCELERATE_USE_CPU": "true"},
        launcher=launcher,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    checksums = json.loads((tmp_path / "ddp" / "metrics.json").read_text())["weights_checksum_per_process"]
    assert len(checksums) == 2 and checksums[0] == checksums[1]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--architecture", "gpt9"], "invalid choice: 'gpt9' (choose from"),
        (["--task", "chess"], "invalid choice: 'chess'"),
        (["--bogus-flag"], "unrecognized arguments: --bogus-flag"),
        (["--preset", "giant"], "preset='giant' is not one of"),
        (["--override", "hidden_siz=3"], "config field 'hidden_siz' is not a field"),
        (["--task-option", "n_states=3"], "argument --task-option: 'n_states' is not one of"),
        (["--batch-size", "0"], "argument --batch-size: batch_size=0 is not allowed: expected an integer >= 1"),
        (["--report-to", "mlflow"], "invalid choice: 'mlflow'"),
        (["--batching", "random"], "argument --batching: invalid choice: 'random'"),
        (["--task", "parity_check", "--augment"], "--augment: task 'parity_check' declares no"),
    ],
)
def test_bad_arguments_fail_before_any_work(argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--output-dir", str(tmp_path / "never")])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "never").exists()


def test_existing_run_is_not_overwritten_without_asking(smoke_run, capsys):
    before = (smoke_run / "metrics.json").read_bytes()
    with pytest.raises(SystemExit):
        main(["--output-dir", str(smoke_run)])
    assert "already holds a run; pass --resume" in capsys.readouterr().err
    assert (smoke_run / "metrics.json").read_bytes() == before


def test_push_to_hub_without_network_fails_at_once(tmp_path):
    started = time.time()
    result = run_train(
        [*TINY_RUN, "--output-dir", str(tmp_path / "run"), "--push-to-hub", "someone/model"],
        env={"HF_HUB_OFFLINE": "1"},
    )
    assert result.returncode == 2 and time.time() - started < 60
    assert "HF_HUB_OFFLINE is set: cannot push" in result.stderr
    assert not (tmp_path / "run").exists()


def test_push_folder_offline_leaves_folder_intact(smoke_run, monkeypatch):
    from hf_icl.hub import HubUnreachableError, push_folder

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    before = {p.name: p.read_bytes() for p in (smoke_run / "model").iterdir()}
    with pytest.raises(HubUnreachableError):
        push_folder(smoke_run / "model", "someone/model")
    assert {p.name: p.read_bytes() for p in (smoke_run / "model").iterdir()} == before


def test_standalone_evaluate_matches_training_metrics(smoke_run, tmp_path):
    from hf_icl.evaluate import main as evaluate_main

    # The task config defaults to the checkpoint's training run (recorded in config.json).
    metrics = evaluate_main(
        [
            "--checkpoint",
            str(smoke_run / "model"),
            "--task",
            "regbench",
            "--output-dir",
            str(tmp_path / "eval"),
            "--batch-size",
            "7",
        ]
    )
    written = json.loads((tmp_path / "eval" / "metrics.json").read_text())
    trained = json.loads((smoke_run / "metrics.json").read_text())["test"]
    assert written["test"]["num_rows"] == trained["num_rows"] == 24
    for key in ("accuracy", "tvd"):
        assert abs(metrics["test"]["model"][key] - trained["model"][key]) < 1e-9
        assert written["test"]["baselines"]["3-gram (paper)"][key] == trained["baselines"]["3-gram (paper)"][key]
    with pytest.raises(SystemExit):  # an existing metrics.json is not replaced without --overwrite
        evaluate_main(
            ["--checkpoint", str(smoke_run / "model"), "--task", "regbench", "--output-dir", str(tmp_path / "eval")]
        )


def test_formal_language_run_writes_length_sweep(tmp_path):
    options = ["--task-option", "n_per_length=4", "--task-option", "test_max_length=48", "--n-train", "256"]
    output = tmp_path / "parity"
    main(["--task", "parity_check", "--architecture", "transformer", "--preset", "tiny", "--threads", "1",
          "--report-to", "none", "--max-steps", "6", "--batch-size", "32", *options, "--output-dir", str(output)])
    metrics = json.loads((output / "metrics.json").read_text())
    test = metrics["test"]
    assert test["train_max_length"] == 40 and sorted(map(int, test["per_length"])) == list(range(41, 49))
    assert 0 <= test["model"]["accuracy"] <= 1 and 0 <= test["model"]["accuracy_in_train_range"] <= 1
    assert test["model"]["accuracy"] == pytest.approx(sum(test["per_length"].values()) / 8)
    validation = metrics["validation"]["model"]  # training lengths only: no mean beyond them, not a NaN one
    assert "accuracy" not in validation and 0 <= validation["accuracy_in_train_range"] <= 1
    assert "| model |" in (output / "summary.md").read_text()
    card = (output / "model" / "README.md").read_text()
    assert "- accuracy\n" in card and "query position" in card

    from hf_icl.evaluate import main as evaluate_main

    again = evaluate_main(["--checkpoint", str(output / "model"), "--task", "parity_check",
                           "--output-dir", str(tmp_path / "eval")])  # fmt: skip
    assert again["test"]["per_length"] == test["per_length"]
    assert (tmp_path / "eval" / "length_generalization.png").read_bytes()[:4] == b"\x89PNG"


USER_PATH = """
import sys
sys.modules["hf_icl"] = None  # as on a machine without hf_icl
from transformers import AutoModelForCausalLM, AutoTokenizer, pipeline
model = AutoModelForCausalLM.from_pretrained(sys.argv[1], trust_remote_code=True)
tokenizer = AutoTokenizer.from_pretrained(sys.argv[1], trust_remote_code=True)
text = pipeline("text-generation", model=model, tokenizer=tokenizer)("abc|ab", max_new_tokens=5, do_sample=False)
print(text[0]["generated_text"])
"""


def test_checkpoint_folder_works_through_pipeline_without_hf_icl(smoke_run, tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", USER_PATH, str(smoke_run / "model")],
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
        env={**os.environ, "HF_MODULES_CACHE": str(tmp_path / "modules"), "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Do you wish to run the custom code" not in result.stdout + result.stderr
    generated = result.stdout.strip().splitlines()[-1]
    assert generated.startswith("abc|ab") and len(generated) <= len("abc|ab") + 5
