"""`--data-seed`: the data order's own seed (transformers' `TrainingArguments.data_seed`), so that initialisation
and data order can be varied apart: its default is `--seed` exactly, another value changes the batches only."""

from cli_entry_points import call
from test_cli_safety import assert_one_line_error
from tiny_runs import TINY_RUN

from hf_icl.training import main as train_main
from hf_icl.training.arguments import RunArguments


def test_the_data_order_seed_is_the_seed_unless_given():
    assert RunArguments(seed=3).data_order_seed() == 3
    assert RunArguments(seed=3, data_seed=5).data_order_seed() == 5
    assert RunArguments(seed=3, data_seed=0).data_order_seed() == 0


def test_a_negative_data_seed_is_one_line(tmp_path):
    outcome = call(train_main, [*TINY_RUN, "--max-steps", "2", "--data-seed", "-1", "--output-dir", str(tmp_path)])
    assert_one_line_error(outcome, "data_seed", "-1")


def losses(tmp_path, name, *options):
    argv = [*TINY_RUN, "--max-steps", "4", "--log-every", "1", *options, "--output-dir", str(tmp_path / name)]
    return [record["loss"] for record in train_main(argv)["train"]["history"]]


def test_the_data_seed_changes_the_batches_and_its_default_changes_nothing(tmp_path):
    default = losses(tmp_path, "default", "--seed", "1")
    assert losses(tmp_path, "same", "--seed", "1", "--data-seed", "1") == default  # bit for bit
    other_order = losses(tmp_path, "order", "--seed", "1", "--data-seed", "2")
    other_init = losses(tmp_path, "init", "--seed", "2", "--data-seed", "1")
    assert other_order != default and other_init != default and other_order != other_init
