"""Block features keep their numbers across the move out of the skeleton (issue 52): models with n-gram heads and
slow/fast streams, built with a fixed seed, give the logits committed before the move (within 1e-6), and
checkpoints saved before it load with the same logits. The fixtures and the script that wrote them (on main, before
the move) are in `tests/fixtures/block_features/`."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM

FIXTURES = Path(__file__).parent / "fixtures" / "block_features"
EXPECTED = json.loads((FIXTURES / "logits.json").read_text())
_spec = importlib.util.spec_from_file_location("make_logits", FIXTURES / "make_logits.py")
make_logits = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_logits)


def test_the_inputs_are_the_committed_ones():
    assert make_logits.input_ids().tolist() == EXPECTED["input_ids"]


@pytest.mark.parametrize("name", sorted(make_logits.CASES))
def test_a_model_built_with_the_same_seed_gives_the_committed_logits(name):
    logits = make_logits.logits_of(name)
    torch.testing.assert_close(logits, torch.tensor(EXPECTED["logits"][name]), atol=1e-6, rtol=0)


@pytest.mark.parametrize("name", sorted(make_logits.CHECKPOINTS))
def test_a_checkpoint_saved_before_the_move_loads_with_the_same_logits(name):
    model = AutoModelForCausalLM.from_pretrained(FIXTURES / name).eval()
    with torch.no_grad():
        logits = model(torch.tensor(EXPECTED["input_ids"])).logits
    torch.testing.assert_close(logits, torch.tensor(EXPECTED["logits"][name]), atol=1e-6, rtol=0)
