"""Sweeps a researcher can iterate on (issue 55, item 4): a finished sweep given more steps continues each point from
its checkpoint (not from scratch), with the schedule recomputed for the new length and recorded, never warming up
again; more seeds are new points; any other change is still `changed`."""

import json

import pytest
from test_sweep import TINY, write_spec

from hf_icl.sweep import EXTENDABLE, lengthens, main


def test_only_a_longer_run_is_an_extension():
    assert EXTENDABLE == ("max_steps", "epochs")
    assert lengthens({"max_steps": (300, 600)}) and lengthens({"epochs": (3.0, 5)})
    assert not lengthens({"max_steps": (600, 300)})  # shorter: the checkpoint is past the end
    assert not lengthens({"max_steps": (300, 600), "lr": (1e-3, 3e-3)})  # and another change: changed
    assert not lengthens({"max_steps": (None, 600)}) and not lengthens({})


@pytest.mark.slow
def test_a_finished_sweep_is_extended_from_its_checkpoints(tmp_path, capsys):
    base = {**TINY, "checkpoint_every": 2, "warmup_steps": 1}
    spec = write_spec(tmp_path, {"seed": [0]}, base={**base, "max_steps": 4})
    assert main([str(spec)]) == 0
    first = json.loads((tmp_path / "sweep" / "seed=0" / "metrics.json").read_text())
    spec = write_spec(tmp_path, {"seed": [0, 1]}, base={**base, "max_steps": 8})
    capsys.readouterr()
    assert main([str(spec), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "seed=0  [extend: max_steps: saved 4, now 8]" in out and "--resume --allow-changed-settings" in out
    assert "seed=1  [new]" in out
    assert main([str(spec)]) == 0
    assert capsys.readouterr().out.count("| trained |") == 2
    extended = json.loads((tmp_path / "sweep" / "seed=0" / "metrics.json").read_text())
    assert extended["train"]["steps"] == 8
    assert extended["train"]["history"][:4] == first["train"]["history"]  # continued, not retrained from scratch
    (change,) = extended["setting_changes"]
    assert change["step"] == 4 and change["changes"]["max_steps"] == {"saved": 4, "now": 8}
    assert change["lr_schedule"]["total_steps"] == 8 and change["lr_schedule"]["saved_total_steps"] == 4
    final = first["train"]["history"][-1]["lr"]
    assert all(record["lr"] <= final * (1 + 1e-9) for record in extended["train"]["history"][4:])  # no re-warm-up
    capsys.readouterr()
    assert main([str(spec)]) == 0  # both match the spec now
    assert capsys.readouterr().out.count("| finished before |") == 2
