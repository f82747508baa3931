"""Overrides that a model ignores (issue 55, item 8): `unread_override` names a shared field only some mixers read
(`ICLConfig.MIXER_ONLY_FIELDS`) that no mixer of the config reads, or a `position_embedding` no mixer applies, with
the architecture. What a mixer reads is its declaration (`reads_shared_fields`, `position_schemes`), and the oracle
below checks each declaration against the attributes the mixer really reads."""

from __future__ import annotations

import pytest
import torch
from cli_entry_points import call
from test_cli_safety import assert_one_line_error
from tiny_runs import TINY_RUN

from hf_icl.architectures import config_for
from hf_icl.mixers.registry import MIXERS, list_mixers, mixer_spec
from hf_icl.modeling.configuration import MIXER_ONLY_FIELDS, POSITION_EMBEDDINGS, ICLConfig, unread_override
from hf_icl.training import main as train_main
from hf_icl.training.arguments import parse_args

BASE = [a for a in TINY_RUN if a not in ("--architecture", "transformer")] + ["--max-steps", "2"]


@pytest.mark.parametrize(
    "architecture, preset, overrides, fragment",
    [
        ("mamba", "tiny", {"num_attention_heads": 4}, "num_attention_heads=4 is read by no mixer"),
        ("mamba", "tiny", {"rope_theta": 500.0}, "rope_theta=500.0 is read by no mixer"),
        ("hyena", "tiny", {"attention_dropout": 0.1}, "attention_dropout=0.1 is read by no mixer"),
        ("retnet", "tiny", {"position_embedding": "alibi"}, "position_embedding='alibi' is applied by no mixer"),
        ("gla", "tiny", {"position_embedding": "rope"}, "position_embedding='rope' is applied by no mixer"),
    ],
)
def test_unread_overrides_are_named(architecture, preset, overrides, fragment):
    config = config_for(architecture, preset, **overrides)
    message = unread_override(config, overrides, architecture)
    assert message is not None and fragment in message and repr(architecture) in message


@pytest.mark.parametrize(
    "architecture, preset, overrides",
    [
        ("mamba", "tiny", {"position_embedding": "learned"}),  # the skeleton adds learned positions to any stack
        ("mamba", "tiny", {"hidden_size": 32, "dropout": 0.1}),  # shared fields
        ("mamba", "mamba_hybrid_middle", {"position_embedding": "rope", "num_attention_heads": 4}),  # one attention
        ("retnet", "tiny", {"position_embedding": "rope", "rope_theta": 500.0}),
        ("transformer", "tiny", {"position_embedding": "hard_alibi", "num_masked_heads": 1}),
        ("gla", "tiny", {"num_attention_heads": 4}),
    ],
)
def test_read_overrides_pass(architecture, preset, overrides):
    assert unread_override(config_for(architecture, preset, **overrides), overrides, architecture) is None


def test_rope_on_mamba_exits_2_with_one_line(tmp_path):
    argv = [*BASE, "--architecture", "mamba", "--override", "position_embedding=rope"]
    outcome = call(train_main, [*argv, "--output-dir", str(tmp_path / "run")])
    assert_one_line_error(outcome, "argument --override", "position_embedding='rope'", "'mamba'", "learned, nope")
    assert not (tmp_path / "run").exists()


def test_a_config_file_is_checked_like_the_command_line(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text("architecture: mamba\npreset: tiny\noverrides: {num_attention_heads: 4}\n")
    with pytest.raises(ValueError, match="argument --override: num_attention_heads=4 is read by no mixer"):
        parse_args(["--config", str(config), "--max-steps", "2"])


class Recording:
    """A config that records the attributes read through it."""

    def __init__(self, config):
        object.__setattr__(self, "_config", config)
        object.__setattr__(self, "reads", set())

    def __getattr__(self, name):
        self.reads.add(name)
        return getattr(self._config, name)

    def __setattr__(self, name, value):
        setattr(self._config, name, value)


@pytest.mark.parametrize("name", list_mixers())
def test_each_mixer_declares_the_mixer_only_fields_it_reads(name):
    spec = mixer_spec(name)
    assert set(spec.position_schemes) <= set(POSITION_EMBEDDINGS) and set(spec.reads_shared_fields) <= set(
        MIXER_ONLY_FIELDS
    )
    config = ICLConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, mixer=name,
                       position_embedding="rope")  # fmt: skip
    recording = Recording(config)
    mixer = MIXERS[name](recording, 0)
    torch.manual_seed(0)
    mixer(torch.randn(2, 8, 32), attention_mask=torch.ones(2, 8, dtype=torch.long),
          input_ids=torch.randint(0, 20, (2, 8)), position_ids=torch.arange(8).expand(2, 8))  # fmt: skip
    assert recording.reads & set(MIXER_ONLY_FIELDS) == set(spec.reads_shared_fields)
    assert ("position_embedding" in recording.reads) == bool(spec.position_schemes)


def test_a_shared_override_applies_where_the_architecture_reads_it():
    shared = ["--shared-override", "position_embedding=rope", "--shared-override", "ssm_state_size=32"]
    transformer = parse_args([*BASE, "--architecture", "transformer", *shared])
    mamba = parse_args([*BASE, "--architecture", "mamba", *shared])
    assert transformer.overrides == {"position_embedding": "rope"}  # the Transformer has no SSM state
    assert mamba.overrides == {"ssm_state_size": 32}  # Mamba applies no RoPE
    given = {"position_embedding": "rope", "ssm_state_size": 32}
    assert transformer.shared_overrides == mamba.shared_overrides == given
    assert config_for("transformer", "tiny", **transformer.overrides).position_embedding == "rope"


def test_an_explicit_override_beats_a_shared_one():
    args = parse_args([*BASE, "--architecture", "transformer", "--shared-override", "position_embedding=rope",
                       "--override", "position_embedding=alibi"])  # fmt: skip
    assert args.overrides == {"position_embedding": "alibi"}


def test_a_shared_value_the_architecture_reads_is_still_checked(tmp_path):
    argv = [*BASE, "--architecture", "mamba", "--shared-override", "ssm_state_size=0"]
    outcome = call(train_main, [*argv, "--output-dir", str(tmp_path / "run")])
    assert_one_line_error(outcome, "argument --shared-override", "ssm_state_size=0")
    assert not (tmp_path / "run").exists()


def test_a_sweep_over_architectures_shares_an_override(tmp_path):
    from hf_icl.sweep import check_points, expand, load_spec

    spec = tmp_path / "spec.yaml"
    base = "{preset: tiny, task: regbench, max_steps: 2, shared_override.position_embedding: rope}"
    spec.write_text(f"output_root: {tmp_path / 'out'}\nbase: {base}\ngrid: {{architecture: [transformer, mamba]}}\n")
    points = expand(load_spec(spec))
    check_points(points)
    assert [p.settings["overrides"] for p in points] == [{"position_embedding": "rope"}, {}]


def test_a_shared_override_no_architecture_knows_is_refused(tmp_path):
    argv = [*BASE, "--architecture", "mamba", "--shared-override", "hiden_size=32"]
    outcome = call(train_main, [*argv, "--output-dir", str(tmp_path / "run")])
    assert_one_line_error(outcome, "argument --shared-override", "'hiden_size'", "not a field of any architecture")
