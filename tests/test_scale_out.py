"""Scale-out on CPU: gradient accumulation, 2-process DDP and 2-process FSDP (sharded per `DecoderBlock`) through the
shipped Accelerate config, with exact resume from sharded checkpoints."""

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest
import torch
import yaml
from accelerate import Accelerator
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

import hf_icl
from hf_icl.tasks import family_of
from hf_icl.training import parse_args
from hf_icl.training.loop import Run, backward_in_micro_batches

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "experiments" / "accelerate"
RUN = [
    "--architecture", "transformer",
    "--preset", "tiny", "--report-to", "none", "--threads", "1", "--n-train", "100", "--task-option", "n_test=8",
       "--task-option", "n_validation=8", "--max-steps", "4", "--checkpoint-every", "2", "--log-every", "1", "--lr",
       "1e-3", "--warmup-steps", "2", "--gradient-accumulation-steps", "2"]  # fmt: skip
TWO_CPU_PROCESSES = ["--num_processes", "2", "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]


def free_port() -> int:
    """A free TCP port for the process group: runs launched at the same time (pytest -n, other sessions) would
    otherwise all rendezvous on Accelerate's default 29500 and hang."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def launch(launcher_args, script_args, env=None):
    return subprocess.run(
        ["accelerate", "launch", "--main_process_port", str(free_port()), *launcher_args, *script_args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env={**os.environ, "OMP_NUM_THREADS": "1", "ACCELERATE_USE_CPU": "true", **(env or {})},
    )


def gradients_after(micro_batches: int) -> tuple[float, dict]:
    args = parse_args(["--preset", "tiny", "--gradient-accumulation-steps", str(micro_batches)])
    run = Run(args, Accelerator(cpu=True), Path("unused"), family_of("regbench"))
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(hf_icl.config_for("transformer", "tiny", vocab_size=20))
    ids = torch.randint(1, 19, (8, 12), generator=torch.Generator().manual_seed(1))  # equal rows: equal token counts
    loss, _ = backward_in_micro_batches(run, model, {"input_ids": ids, "labels": ids.clone()})
    return loss.item(), {name: p.grad for name, p in model.named_parameters()}


def test_micro_batches_give_the_gradient_of_one_backward():
    loss, grads = gradients_after(1)
    loss_split, grads_split = gradients_after(3)  # 8 rows -> micro-batches of 3, 3 and 2 rows
    assert loss_split == pytest.approx(loss, abs=1e-6)
    for name, grad in grads.items():
        torch.testing.assert_close(grads_split[name], grad, atol=1e-7, rtol=1e-5, msg=name)


def test_accelerate_configs_name_the_decoder_block_and_bf16():
    fsdp = yaml.safe_load((CONFIGS / "fsdp_bf16.yaml").read_text())
    assert fsdp["distributed_type"] == "FSDP" and fsdp["mixed_precision"] == "bf16"
    assert fsdp["fsdp_config"]["fsdp_transformer_layer_cls_to_wrap"] == "DecoderBlock"
    assert any(type(m).__name__ == "DecoderBlock" for m in AutoModelForCausalLM.from_config(
        hf_icl.config_for("transformer", "tiny", vocab_size=20)).modules())  # fmt: skip
    for name in ("ddp_multi_gpu", "multi_node"):
        config = yaml.safe_load((CONFIGS / f"{name}.yaml").read_text())
        assert config["distributed_type"] == "MULTI_GPU" and config["mixed_precision"] == "bf16"
    assert yaml.safe_load((CONFIGS / "multi_node.yaml").read_text())["num_machines"] == 2


@pytest.fixture(scope="module")
def ddp_run(tmp_path_factory):
    output = tmp_path_factory.mktemp("ddp") / "run"
    result = launch(["--multi_gpu", *TWO_CPU_PROCESSES], ["train.py", *RUN, "--output-dir", str(output)])
    assert result.returncode == 0, result.stderr[-3000:]
    return output


def test_ddp_with_accumulation_keeps_ranks_equal_and_the_schedule_in_optimiser_steps(ddp_run):
    metrics = json.loads((ddp_run / "metrics.json").read_text())
    checksums = metrics["weights_checksum_per_process"]
    assert len(checksums) == 2 and checksums[0] == checksums[1]
    # A 2-step warm-up: halfway after step 1, at the peak after step 2, whatever the schedule after it. One scheduler
    # step per optimiser step, whatever the number of processes (linked to the optimiser, Accelerate would step it
    # once per process: at the peak after step 1).
    start = parse_args(RUN).warmup_start_lr
    assert [h["lr"] for h in metrics["train"]["history"][:2]] == pytest.approx([start + (1e-3 - start) / 2, 1e-3])


@pytest.mark.slow  # two 2-process launches (a kill, a resume): 68 s on 2 cores; DDP's launches stay in every run
def test_fsdp_on_cpu_matches_ddp_and_resumes_from_sharded_checkpoints(ddp_run, tmp_path):
    # Accelerate 1.15 refuses FSDP on CPU processes; tests/fsdp_on_cpu.py enables it (see its docstring).
    launcher = ["--config_file", str(CONFIGS / "fsdp_bf16.yaml"), *TWO_CPU_PROCESSES, "tests/fsdp_on_cpu.py"]
    output = tmp_path / "fsdp"
    killed = launch(launcher, ["train.py", *RUN, "--output-dir", str(output)], env={"HF_ICL_TEST_KILL_AT_STEP": "3"})
    assert killed.returncode != 0 and not (output / "model").exists()
    assert (output / "checkpoints" / "step_2" / "pytorch_model_fsdp_0").is_dir()  # one shard per process
    resumed = launch(launcher, ["train.py", *RUN, "--output-dir", str(output), "--resume"])
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resumed from" in resumed.stdout + resumed.stderr
    sharded = load_file(output / "model" / "model.safetensors")
    replicated = load_file(ddp_run / "model" / "model.safetensors")
    assert sharded.keys() == replicated.keys()
    for name in sharded:
        torch.testing.assert_close(sharded[name], replicated[name], atol=1e-6, rtol=0, msg=name)
    metrics = json.loads((output / "metrics.json").read_text())
    expected = json.loads((ddp_run / "metrics.json").read_text())["test"]["model"]  # weights agree to 1e-6, so do these
    assert metrics["test"]["model"] == pytest.approx(expected, rel=1e-6, abs=1e-9)
    assert AutoModelForCausalLM.from_pretrained(output / "model").num_parameters() == metrics["num_parameters"]

