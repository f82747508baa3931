"""Zoo-wide checks: matched parameter counts per size preset (and the README's table of them), and `train.py` learns
with every architecture."""

import importlib.util
import json
import re
from pathlib import Path

import pytest
from tiny_runs import TINY_RUN
from transformers import AutoModelForCausalLM

import hf_icl
from hf_icl.architectures import ARCHITECTURES, non_embedding_parameters
from hf_icl.training import main as train_main

SIZES = ("tiny", "small", "base")


def test_every_architecture_has_the_size_presets():
    for arch, entry in ARCHITECTURES.items():
        assert set(SIZES) <= set(entry.presets), arch


@pytest.mark.parametrize("size", SIZES)
def test_presets_of_one_size_are_parameter_matched(size):
    """Non-embedding parameters: every architecture within ±15 % of the Transformer, and of every other one."""
    counts = {}
    for arch in hf_icl.list_architectures():
        model = AutoModelForCausalLM.from_config(hf_icl.config_for(arch, size, vocab_size=20))
        counts[arch] = non_embedding_parameters(model)
    reference = counts["transformer"]
    outside = {arch: n for arch, n in counts.items() if abs(n / reference - 1) > 0.15}
    assert not outside, f"{size}: transformer has {reference:,}; outside ±15 %: {outside}"
    largest, smallest = max(counts, key=counts.get), min(counts, key=counts.get)
    assert counts[largest] <= 1.15 * counts[smallest], (
        f"{size}: {largest} {counts[largest]:,} vs {smallest} {counts[smallest]:,}"
    )


ROOT = Path(__file__).resolve().parents[1]


def readme_parameter_table() -> dict[str, tuple[int, ...]]:
    """`{architecture: (tiny, small, base)}` non-embedding counts from the README's architecture table."""
    rows = re.findall(r"^\| `(\w+)` \| ([\d,]+) \| ([\d,]+) \| ([\d,]+) \|", (ROOT / "README.md").read_text(), re.M)
    return {arch: tuple(int(count.replace(",", "")) for count in counts) for arch, *counts in rows}


def test_readme_parameter_table_matches_the_presets():
    """The README's counts are what `experiments/parameter_table.py` computes, for every registered architecture."""
    spec = importlib.util.spec_from_file_location("parameter_table", ROOT / "experiments" / "parameter_table.py")
    parameter_table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(parameter_table)
    table = readme_parameter_table()
    assert sorted(table) == hf_icl.list_architectures()
    for arch, counts in table.items():
        computed = tuple(parameter_table.parameter_counts(arch, size)[0] for size in SIZES)
        assert counts == computed, f"README row of {arch}: {counts}, presets give {computed}"


@pytest.mark.parametrize("arch", sorted(set(hf_icl.list_architectures()) - {"transformer"}))
def test_train_py_loss_decreases_in_20_steps(arch, tmp_path):
    """20 steps of `train.py --architecture <arch>` on a tiny RegBench lower the training loss. The script's `main`
    runs in this process: the script itself, in a fresh interpreter, is `test_training`'s smoke run (the
    Transformer), and one interpreter start per architecture cost more than the 20 steps. The prompts are short
    (`tiny_runs.SHORT_PROMPTS`)."""
    output = tmp_path / "run"
    train_main(
        [*TINY_RUN, "--architecture", arch, "--max-steps", "20", "--lr", "3e-3", "--log-every", "1"]
        + ["--batch-size", "16", "--task-option", "n_test=8", "--output-dir", str(output)]
    )
    losses = [h["loss"] for h in json.loads((output / "metrics.json").read_text())["train"]["history"]]
    assert len(losses) == 20
    assert sum(losses[-5:]) / 5 < sum(losses[:5]) / 5 - 0.05, losses  # 5-step means: batches of 16 are noisy
