"""`train.py --report-to wandb`: Accelerate's Weights & Biases tracker, run offline (`WANDB_MODE=offline`, no
network, no account). The run's configuration and every logged training metric are in the offline run files, which
wandb writes inside the run folder."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from wandb.proto import wandb_internal_pb2  # in the dev extra: a missing package fails here, it does not skip

ROOT = Path(__file__).resolve().parents[1]
STEPS = 4
RUN = [
    "--architecture", "transformer",
    "--preset", "tiny", "--threads", "1", "--warmup-steps", "1", "--max-steps", str(STEPS), "--log-every", "1",
       "--n-train", "100", "--task-option", "n_test=4", "--task-option", "n_validation=4"]  # fmt: skip


BLOCK = 32768  # the transaction log is a LevelDB-style log: 32 KiB blocks of checksummed chunks


def offline_records(run_file: Path) -> list:
    """Every record of an offline run's transaction log (`run-<id>.wandb`), checksums verified: a 7-byte header
    (`:W&B`, magic, version), then chunks `crc32 (4) | length (2) | kind (1) | data`, kind 1 a whole record and
    2/3/4 its first, middle and last pieces; a block's tail shorter than a chunk header is padding."""
    data = run_file.read_bytes()
    assert data[:4] == b":W&B", data[:7]
    records, pieces, offset = [], [], 7
    while offset + 7 <= len(data):
        left = BLOCK - offset % BLOCK
        if left < 7:
            offset += left
            continue
        checksum, length, kind = struct.unpack("<IHB", data[offset : offset + 7])
        if kind == 0 and length == 0:  # zero padding to the end of the block
            offset += left
            continue
        chunk = data[offset + 7 : offset + 7 + length]
        assert zlib.crc32(chunk, zlib.crc32(bytes([kind]))) == checksum, f"corrupt chunk at byte {offset}"
        offset += 7 + length
        pieces.append(chunk)
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(b"".join(pieces))
            records.append(record)
            pieces = []
    return records


def test_report_to_wandb_writes_the_metrics_to_the_offline_run(tmp_path):
    wandb_dirs = {"WANDB_CONFIG_DIR": str(tmp_path / "wandb-config"), "WANDB_CACHE_DIR": str(tmp_path / "wandb-cache")}
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WANDB_MODE": "offline", "WANDB_SILENT": "true", **wandb_dirs}
    output = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, str(ROOT / "train.py"), *RUN, "--report-to", "wandb", "--output-dir", str(output)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    runs = sorted((output / "wandb").glob("offline-run-*"))
    assert len(runs) == 1, f"one offline run inside the run folder, found {runs}"
    (run_file,) = runs[0].glob("run-*.wandb")
    records = offline_records(run_file)

    history = {}
    for record in records:
        if record.WhichOneof("record_type") == "history":
            items = {item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in record.history.item}
            history[int(items["_step"])] = items
    train_history = json.loads((output / "metrics.json").read_text())["train"]["history"]
    assert len(train_history) == STEPS
    for entry in train_history:
        logged = history[entry["step"]]
        assert logged["train/loss"] == entry["loss"], (logged, entry)
        assert logged["train/lr"] == entry["lr"]

    config = {}
    for record in records:
        if record.WhichOneof("record_type") == "config":
            config.update({item.key: json.loads(item.value_json) for item in record.config.update})
    assert config["task"] == "regbench" and config["max_steps"] == STEPS and config["report_to"] == "wandb"


def test_report_to_wandb_without_wandb_fails_before_any_work(tmp_path, monkeypatch, capsys):
    import importlib.util

    from hf_icl.training import main

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else find_spec(name, *a))
    with pytest.raises(SystemExit) as exit_:
        main([*RUN, "--report-to", "wandb", "--output-dir", str(tmp_path / "run")])
    assert exit_.value.code == 2 and not (tmp_path / "run").exists()
    assert "report_to='wandb' needs the wandb package (pip install \"hf-icl[tracking]\")" in capsys.readouterr().err
