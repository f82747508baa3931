"""A researcher's own study, end to end, as the docs tell it (issue 55's acceptance): the task's options from
`--help`; a 2-architecture × 2-seed MQAR sweep from Python, extended to more steps from its checkpoints; its report
with mean ± sd and n = 2; `hf_icl.train(...)` with a `transformers` schedule; a re-export with another vocabulary
loaded fresh; and an override Mamba ignores refused in one line. Each step's finer cases have their own tests
(test_option_help, test_sweep_extension, test_report_rules, test_python_api, test_export_fingerprint,
test_unread_overrides); this one plays them in sequence on one study folder."""

from __future__ import annotations

import json

import pytest
from cli_entry_points import call
from test_cli_safety import assert_one_line_error
from test_export_fingerprint import export, highest_token

import hf_icl
from hf_icl.report import main as report_main
from hf_icl.training import main as train_main

SMALL_MQAR = {"n_test": 8, "n_validation": 8, "vocab_size": 64, "input_seq_len": 16, "num_kv_pairs": 2}


@pytest.mark.slow  # eight short trainings in subprocesses: about two minutes on two cores
def test_a_study_from_the_docs_alone(tmp_path, capsys):
    # 1. What can be set on MQAR: `train.py --task mqar --help`.
    outcome = call(train_main, ["--task", "mqar", "--help"])
    assert outcome.status == 0 and "num_kv_pairs" in outcome.out

    # 2. Transformer against Mamba, two seeds each: RoPE is the Transformer's, shared so Mamba leaves it out.
    base = {"task": "mqar", "preset": "tiny", "n_train": 32, "max_steps": 4, "checkpoint_every": 2,
            "warmup_steps": 1, "threads": 1, "report_to": "none", "shared_override.position_embedding": "rope",
            **{f"task_option.{key}": value for key, value in SMALL_MQAR.items()}}  # fmt: skip
    spec = {"output_root": str(tmp_path / "sweep"), "base": base,
            "grid": {"architecture": ["transformer", "mamba"], "seed": [0, 1]}}  # fmt: skip
    first = hf_icl.sweep(spec)
    assert [result["status"] for result in first] == ["trained"] * 4
    runs = {p.name: json.loads((p / "metrics.json").read_text()) for p in (tmp_path / "sweep").iterdir() if p.is_dir()}
    assert runs["architecture=transformer,seed=0"]["run_config"]["overrides"] == {"position_embedding": "rope"}
    assert runs["architecture=mamba,seed=0"]["run_config"]["overrides"] == {}

    # 3. Extended to 6 steps: each point goes on from its checkpoint, its first 4 steps kept.
    extended = hf_icl.sweep({**spec, "base": {**base, "max_steps": 6}})
    assert [result["status"] for result in extended] == ["trained"] * 4
    for name, before in runs.items():
        after = json.loads((tmp_path / "sweep" / name / "metrics.json").read_text())
        kept = [record for record in after["train"]["history"] if record["step"] <= 4]
        assert after["train"]["steps"] == 6 and kept == before["train"]["history"], name

    # 4. The study's report: one row per grid point, mean ± sd over n = 2 seeds, and no paper findings.
    report_main([str(tmp_path / "sweep"), "--output", str(tmp_path / "report")])
    summary = (tmp_path / "report" / "REPORT.md").read_text()
    for architecture in ("transformer", "mamba"):
        row = next(line for line in summary.splitlines() if line.startswith(f"| `architecture={architecture}` |"))
        assert "| 2 |" in row and " ± " in row, row
    assert not (tmp_path / "report" / "findings.json").exists()

    # 5. From Python, with a `transformers` schedule (`--lr-schedule linear`).
    run = hf_icl.train(task="mqar", architecture="mamba", preset="tiny", max_steps=5, lr_schedule="linear",
                       output_dir=str(tmp_path / "api"), n_train=32, task_options=SMALL_MQAR, report_to="none",
                       threads=1)  # fmt: skip
    assert run.metrics["train"]["steps"] == 5 and "accuracy" in json.dumps(run.metrics["test"])

    # 6. The data for others: a re-export with another vocabulary loads the new rows, no download_mode.
    export(tmp_path / "export", tmp_path, 64)
    assert highest_token(tmp_path / "export", tmp_path) < 64
    export(tmp_path / "export", tmp_path, 1024)
    assert highest_token(tmp_path / "export", tmp_path) >= 64

    # 7. An override Mamba would ignore is refused in one line, before any work.
    argv = ["--task", "mqar", "--architecture", "mamba", "--preset", "tiny", "--max-steps", "2",
            "--override", "position_embedding=rope", "--output-dir", str(tmp_path / "refused")]  # fmt: skip
    assert_one_line_error(call(train_main, argv), "position_embedding='rope'", "'mamba'")
    assert not (tmp_path / "refused").exists()
